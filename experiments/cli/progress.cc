// Progress; see progress.h.
#include "experiments/cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace fedpar {

Progress::Progress(bool enabled)
    : enabled_(enabled),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (dirty_) fmt::print(stderr, "\r\033[K");
}

bool Progress::update(int64_t done, int64_t total, const std::string& text) {
  if (!enabled_ || total <= 0) return false;
  const auto now = std::chrono::steady_clock::now();
  const int decile = int(10 * done / total);
  if (tty_ ? (now - last_ < std::chrono::milliseconds(200) && done < total)
           : decile == last_decile_)
    return false;
  last_ = now;
  last_decile_ = decile;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = done > 0 ? elapsed * double(total - done) / double(done) : 0.0;
  const std::string msg = fmt::format("{:3d}% {} | {:.0f}s elapsed, ETA {:.0f}s",
                                      int(100 * done / total), text, elapsed, eta);
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}", msg);
    dirty_ = true;
  } else {
    fmt::print(stderr, "{}\n", msg);
  }
  std::fflush(stderr);
  return true;
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  if (dirty_) fmt::print(stderr, "\r\033[K");
  dirty_ = false;
  fmt::print(stderr, "{}\n", text);
  std::fflush(stderr);
}

}  // namespace fedpar
