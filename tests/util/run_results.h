// Reading a run's results folder in tests: its final model and its hash, its metrics lines, and how
// far two models are apart.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/safetensors.h"

namespace fedpar::testing {

// model.safetensors of a results folder, its tensors in file order as one flat vector.
inline std::vector<float> final_params(const std::filesystem::path& results) {
  std::vector<float> all;
  for (const auto& [n, t] : load_safetensors(results / "model.safetensors").tensors)
    all.insert(all.end(), t.values.begin(), t.values.end());
  return all;
}

// summary.json's model_hash of a results folder; a message in its place when there is none.
inline std::string model_hash(const std::filesystem::path& results) {
  std::ifstream in(results / "summary.json");
  if (!in) return "(no summary.json in " + results.string() + ")";
  return nlohmann::json::parse(in).at("model_hash").get<std::string>();
}

// A report spanning runs (a suite's, the equivalence experiment's) records the build and the
// machine: its JSON's `provenance` and its report.md's "Made by fedpar COMMIT (UNITS, KERNELS) on
// MACHINE" line agree, and the fedpar executable set its commit.
inline std::string provenance_mismatch(const nlohmann::json& j, const std::string& report) {
  if (!j.contains("provenance")) return "no provenance in " + j.dump().substr(0, 200);
  const auto& p = j["provenance"];
  if (!p.contains("source_commit") || p.value("machine", "").empty() ||
      p.value("blas_kernels", "").empty())
    return "provenance lacks the commit, the machine or the kernels: " + p.dump();
  const std::string line = "Made by fedpar " + p["source_commit"].get<std::string>() + " (" +
                           p["build_vector_units"].get<std::string>() + ", " +
                           p["blas_kernels"].get<std::string>() + ") on " +
                           p["machine"].get<std::string>();
  return report.find(line) != std::string::npos ? "" : "report.md lacks \"" + line + "\"";
}

// One JSON object per line (metrics.jsonl, updates.jsonl).
inline std::vector<nlohmann::json> jsonl(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// ||a - b|| / ||b||, in double.
inline double relative_distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d += std::pow(double(a[i]) - b[i], 2), n += std::pow(double(b[i]), 2);
  return std::sqrt(d / n);
}

}  // namespace fedpar::testing
