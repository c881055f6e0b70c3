// Lines over a pipe between a benchmark and the worker processes it forks (endpoints, "ready").
#pragma once

#include <unistd.h>

#include <string>

#include "core/check.h"

namespace fedpar {

inline void write_line(int fd, const std::string& s) {
  const std::string line = s + "\n";
  FEDPAR_CHECK(::write(fd, line.data(), line.size()) == ssize_t(line.size())) << "pipe write";
}

// The next line without its newline; "" once the writer has closed the pipe.
inline std::string read_line(int fd) {
  std::string s;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

}  // namespace fedpar
