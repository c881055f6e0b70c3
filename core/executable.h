// This executable's path, as the kernel names it (/proc/self/exe).
#pragma once

#include <filesystem>
#include <string>

namespace fedpar {

// The running fedpar's file, without the " (deleted)" the kernel appends once a rebuild replaced
// it on disk; empty when the system does not say.
std::filesystem::path executable_path();

// The fedpar executable as the working folder reaches it (./build/fedpar in a source tree), or
// its absolute path; "fedpar" when the system does not say. What a "run it again" line names.
std::string this_executable();

}  // namespace fedpar
