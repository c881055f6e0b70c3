// A run's checkpoint: named float32 and float64 vectors (the model, optimizer moments, control
// variates) and a JSON object (the round, the records to carry on), in one file written
// atomically: a temporary file, fsync, rename, fsync of the folder. A crash leaves the previous
// checkpoint or the new one, never half of one. The file ends with a CRC32C of everything before
// it, and the reader checks every length against the file's size, so a damaged file is an Error,
// never a wrong state.
//   "FDPRCKPT" | u32 version | u64 JSON length | JSON | the vectors' bytes | u32 CRC32C
// The JSON lists each vector as {"name", "dtype": "f32" | "f64", "count"}, in file order.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fedpar {

struct Checkpoint {
  nlohmann::json meta = nlohmann::json::object();
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<double>> f64;

  // The vector `name`, or Error naming the file's missing entry.
  const std::vector<float>& floats(const std::string& name) const;
  const std::vector<double>& doubles(const std::string& name) const;
};

// Throws Error naming the path and the system's reason (e.g. "No space left on device").
void write_checkpoint(const std::filesystem::path& file, const Checkpoint& c);
// Throws Error naming the path and what is wrong with it.
Checkpoint read_checkpoint(const std::filesystem::path& file);

}  // namespace fedpar
