// Progress on stderr: a line redrawn in place on a terminal (at most 5 times a second), or a
// plain line every 10% when stderr is a file or pipe, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fedpar {

class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress();  // ends an in-place line, so what follows (an error) starts on its own
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // `done` of `total` units; `text` is shown after the percentage. Adds elapsed time and ETA.
  // Returns true when it printed, so callers can reset what they average between prints.
  bool update(int64_t done, int64_t total, const std::string& text);
  // Prints a line that stays (clears the in-place line first).
  void line(const std::string& text);

 private:
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_, last_;
  int last_decile_ = 0;
  bool dirty_ = false;
};

}  // namespace fedpar
