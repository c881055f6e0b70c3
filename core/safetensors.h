// Checkpoints in the safetensors format (u64 LE header length, JSON header, raw LE tensors), so
// common ML tooling reads fedpar models. Only F32 tensors are written and read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/params.h"

namespace fedpar {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct TensorFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Writes every view of `layout` from the flat vector `params`, atomically (temp file + rename).
void save_safetensors(const std::filesystem::path& path, const ParamLayout& layout,
                      std::span<const float> params,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file, validating the header against the file size. Throws Error.
TensorFile load_safetensors(const std::filesystem::path& path);

// Fills the flat vector for `layout` from a file; every name and shape must match.
std::vector<float> load_params(const std::filesystem::path& path, const ParamLayout& layout);
// The same for a file already read (`path` names it in errors).
std::vector<float> load_params(const TensorFile& file, const std::filesystem::path& path,
                               const ParamLayout& layout);

}  // namespace fedpar
