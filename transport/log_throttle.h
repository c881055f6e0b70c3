// A log that a flood cannot flood: the first `full` events of a series are logged whole, then at
// most one line every `every_seconds` counts those not logged (used for rejected peers).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace fedpar {

class LogThrottle {
 public:
  explicit LogThrottle(uint64_t full = 20, double every_seconds = 10)
      : full_(full), every_(std::chrono::duration<double>(every_seconds)) {}
  // What to log for the next event: `line` for the first `full`, then `count(unlogged, all)`
  // once a period, else "" (stay quiet).
  std::string next(const std::string& line,
                   const std::function<std::string(uint64_t, uint64_t)>& count) {
    if (++all_ <= full_) return line;
    ++unlogged_;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return "";
    next_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(every_);
    const std::string out = count(unlogged_, all_);
    unlogged_ = 0;
    return out;
  }
  uint64_t all() const { return all_; }

 private:
  uint64_t full_, all_ = 0, unlogged_ = 0;
  std::chrono::duration<double> every_;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace fedpar
