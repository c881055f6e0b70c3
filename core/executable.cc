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

std::string this_executable() {
  const auto exe = executable_path();
  if (exe.empty()) return "fedpar";
  std::error_code ec;
  const auto here = std::filesystem::current_path(ec);
  const auto rel = exe.lexically_relative(here);
  if (ec || rel.empty() || rel.begin()->string() == "..") return exe.string();
  return (std::filesystem::path(".") / rel).string();
}

}  // namespace fedpar
