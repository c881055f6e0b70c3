// See peak_memory.h.
#include "core/peak_memory.h"

#include <fstream>
#include <string>

namespace fedpar {

uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // in kB
  return 0;
}

}  // namespace fedpar
