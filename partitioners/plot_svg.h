// One SVG picture of a partition: a clients x labels heatmap (each client's label shares) beside a
// histogram of client sizes. Plain SVG written here, so no plotting package is needed to view it.
#pragma once

#include <string>

#include "partitioners/manifest.h"

namespace fedpar {

std::string partition_svg(const Manifest& m, const std::string& title);

}  // namespace fedpar
