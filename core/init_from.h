// model.init_from: a run or a training that starts from saved parameters (a finished run's
// model.safetensors, a params/round-N snapshot, fedpar train's model) instead of a random init.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/model.h"

namespace fedpar {

// The file model.init_from names: the path itself, or a results folder's model.safetensors.
// Throws Error saying what is missing.
std::filesystem::path init_from_file(const std::string& init_from);

// The model's first parameters: init(seed) when spec.init_from is empty, else the file's tensors
// (every name and shape checked against the model; a file saved for another model is named).
void init_model(Model& model, const ModelSpec& spec, uint64_t seed);

// A results README's line naming what a run or training started from, and its parameters' hash.
std::string started_from_line(const std::string& init_from, const std::string& hash);

}  // namespace fedpar
