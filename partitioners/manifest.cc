// Manifest; see manifest.h.
#include "partitioners/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "core/json_integer.h"
#include "core/rng.h"

namespace fedpar {

size_t Manifest::assigned() const {
  size_t n = 0;
  for (const auto& c : clients) n += c.indices.size();
  return n;
}

size_t Manifest::held_out() const {
  size_t n = 0;
  for (const auto& c : clients) n += c.held_out.size();
  return n;
}

namespace {

uint64_t manifest_hash(const Manifest& m) {
  const std::string head = fmt::format("{}|{}|{}|{}|{}", m.scheme, m.params.dump(), m.seed,
                                       m.dataset_name, m.dataset_hash);
  uint64_t h = hash_bytes(head.data(), head.size());
  for (const auto& c : m.clients) {
    const uint64_t meta[2] = {c.id, c.indices.size()};
    h = hash_bytes(meta, sizeof(meta), h);
    h = hash_bytes(&c.noise, sizeof(c.noise), h);
    h = hash_bytes(c.indices.data(), c.indices.size() * sizeof(uint32_t), h);
    if (c.held_out.empty()) continue;  // so a manifest without holdout keeps its hash
    const uint64_t held = c.held_out.size();
    h = hash_bytes(&held, sizeof(held), h);
    h = hash_bytes(c.held_out.data(), c.held_out.size() * sizeof(uint32_t), h);
  }
  return h;
}

}  // namespace

void Manifest::finalize(const std::vector<int32_t>& labels, int num_classes) {
  for (auto& c : clients) {
    std::sort(c.indices.begin(), c.indices.end());
    std::sort(c.held_out.begin(), c.held_out.end());
    c.label_histogram.assign(size_t(num_classes), 0);
    for (uint32_t i : c.indices) ++c.label_histogram[size_t(labels[i])];
  }
  hash = hash_hex(manifest_hash(*this));
}

nlohmann::json to_json(const Manifest& m) {
  nlohmann::json clients = nlohmann::json::array();
  for (const auto& c : m.clients) {
    nlohmann::json jc = {{"id", c.id},
                         {"size", c.indices.size()},
                         {"label_histogram", c.label_histogram},
                         {"indices", c.indices}};
    if (c.noise != 0.0) jc["noise"] = c.noise;
    if (!c.held_out.empty()) jc["held_out"] = c.held_out;
    clients.push_back(std::move(jc));
  }
  return {{"format", "fedpar-manifest"},
          {"version", 1},
          {"scheme", m.scheme},
          {"params", m.params},
          {"seed", m.seed},
          {"dataset", {{"name", m.dataset_name}, {"hash", m.dataset_hash}}},
          {"hash", m.hash},
          {"clients", clients}};
}

Manifest manifest_from_json(const nlohmann::json& j, size_t dataset_size) {
  Manifest m;
  try {
    if (j.value("format", "") != "fedpar-manifest" ||
        j.value("version", nlohmann::json()) != 1)  // a float here must not be cast
      throw Error("not a fedpar manifest of version 1");
    m.scheme = j.at("scheme").get<std::string>();
    m.params = j.at("params");
    m.seed = json_integer<uint64_t>(j.at("seed"), "seed");
    m.dataset_name = j.at("dataset").at("name").get<std::string>();
    m.dataset_hash = j.at("dataset").at("hash").get<std::string>();
    std::vector<bool> seen(dataset_size, false);
    for (const auto& jc : j.at("clients")) {
      ClientShard c;
      c.id = json_integer<uint32_t>(jc.at("id"), "a client's id");
      c.indices = json_integers<uint32_t>(jc.at("indices"), "a client's indices");
      c.label_histogram = json_integers<int64_t>(jc.at("label_histogram"), "a label histogram");
      c.noise = jc.value("noise", 0.0);
      if (jc.contains("held_out"))
        c.held_out = json_integers<uint32_t>(jc.at("held_out"), "a client's held-out indices");
      for (const auto* part : {&c.indices, &c.held_out})
        for (uint32_t i : *part) {
          if (i >= dataset_size)
            throw Error(fmt::format("client {}: index {} is outside the dataset ({} samples)", c.id,
                                    i, dataset_size));
          if (seen[i]) throw Error(fmt::format("sample {} is assigned twice", i));
          seen[i] = true;
        }
      m.clients.push_back(std::move(c));
    }
    m.hash = j.at("hash").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("malformed manifest: {}", e.what()));
  }
  if (hash_hex(manifest_hash(m)) != m.hash)
    throw Error(fmt::format("manifest hash mismatch: file says {}, contents give {}", m.hash,
                            hash_hex(manifest_hash(m))));
  return m;
}

void write_manifest(const std::filesystem::path& path, const Manifest& m) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json(m).dump() << "\n";
    if (!out) throw Error(fmt::format("cannot write {}", tmp));
  }
  std::filesystem::rename(tmp, path);
}

Manifest read_manifest(const std::filesystem::path& path, size_t dataset_size) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot open manifest {}", path.string()));
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(fmt::format("{}: not valid JSON", path.string()));
  return manifest_from_json(j, dataset_size);
}

}  // namespace fedpar
