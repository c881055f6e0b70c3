// A user's own data as CSV: one sample per line, `features..., label[, user]`. An optional header
// line is skipped (and a last header column named "user" marks the user column).
#pragma once

#include <filesystem>

#include "core/dataset.h"

namespace fedpar {

// `user_column`: the last column holds integer user ids. Throws Error naming file:line on bad
// input.
Dataset read_csv_dataset(const std::filesystem::path& path, bool user_column);

}  // namespace fedpar
