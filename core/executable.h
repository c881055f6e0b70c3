// This executable's path, as the kernel names it (/proc/self/exe).
#pragma once

#include <filesystem>

namespace fedpar {

// The running fedpar's file, without the " (deleted)" the kernel appends once a rebuild replaced
// it on disk; empty when the system does not say.
std::filesystem::path executable_path();

}  // namespace fedpar
