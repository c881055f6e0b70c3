// executable_path; see executable.h.
#include "core/executable.h"

#include <string>
#include <system_error>

namespace fedpar {

std::filesystem::path executable_path() {
  std::error_code ec;
  std::string path = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return {};
  if (path.ends_with(" (deleted)")) path.resize(path.size() - std::string(" (deleted)").size());
  return path;
}

}  // namespace fedpar
