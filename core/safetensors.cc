// safetensors reader and writer; see safetensors.h.
#include "core/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_integer.h"

namespace fedpar {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace fs = std::filesystem;
using nlohmann::json;

void save_safetensors(const fs::path& path, const ParamLayout& layout,
                      std::span<const float> params,
                      const std::map<std::string, std::string>& metadata) {
  FEDPAR_CHECK(params.size() == layout.total()) << "params do not match the layout";
  json header = json::object();
  for (const auto& v : layout.views()) {
    const uint64_t begin = v.offset * sizeof(float);
    header[v.name] = {{"dtype", "F32"},
                      {"shape", v.shape},
                      {"data_offsets", {begin, begin + v.size * sizeof(float)}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the tensor data 8-byte aligned
  const uint64_t n = text.size();

  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("cannot write {}", tmp.string()));
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), std::streamsize(n));
    out.write(reinterpret_cast<const char*>(params.data()),
              std::streamsize(params.size() * sizeof(float)));
    if (!out) throw Error(fmt::format("write failed: {}", tmp.string()));
  }
  fs::rename(tmp, path);
}

TensorFile load_safetensors(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open checkpoint {}", path.string()));
  const uint64_t file_size = fs::file_size(path);
  uint64_t n = 0;
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(&n), 8) || n > file_size - 8)
    throw Error(fmt::format("{}: not a safetensors file (bad header length)", path.string()));
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object())
    throw Error(fmt::format("{}: safetensors header is not a JSON object", path.string()));
  const uint64_t data_size = file_size - 8 - n;
  std::vector<char> data(data_size);
  in.read(data.data(), std::streamsize(data_size));
  if (!in) throw Error(fmt::format("{}: read failed", path.string()));

  TensorFile out;
  try {
    for (auto& item : header.items()) {  // not a structured binding: lambdas below name it
      const std::string& name = item.key();
      const json& entry = item.value();
      if (name == "__metadata__") {
        for (auto& [k, v] : entry.items())
          if (v.is_string()) out.metadata[k] = v.get<std::string>();
        continue;
      }
      auto where = [&](const std::string& what) {
        return fmt::format("{}: tensor '{}': {}", path.string(), name, what);
      };
      auto bad = [&](const std::string& why) { return Error(where(why)); };
      if (!entry.is_object() || entry.value("dtype", "") != "F32")
        throw bad("only F32 is supported");
      const auto& offs = entry.at("data_offsets");
      const uint64_t begin = json_integer<uint64_t>(offs.at(0), where("data_offsets")),
                     end = json_integer<uint64_t>(offs.at(1), where("data_offsets"));
      Tensor t;
      uint64_t count = 1;
      bool overflow = false;  // [2^62, 4] must not wrap to a size that passes
      for (const auto& d : entry.at("shape")) {
        t.shape.push_back(json_integer<int64_t>(d, where("a dimension")));
        if (t.shape.back() < 0) throw bad("negative dimension");
        overflow |= __builtin_mul_overflow(count, uint64_t(t.shape.back()), &count);
      }
      if (overflow || count > data_size / sizeof(float))
        throw bad("its shape holds more values than the file");
      if (begin > end || end > data_size || end - begin != count * sizeof(float))
        throw bad("data offsets do not match its shape or the file size");
      t.values.resize(count);
      if (count > 0)  // data() of an empty vector may be null
        std::memcpy(t.values.data(), data.data() + begin, count * sizeof(float));
      out.tensors.emplace(name, std::move(t));
    }
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: malformed safetensors header: {}", path.string(), e.what()));
  }
  return out;
}

std::vector<float> load_params(const fs::path& path, const ParamLayout& layout) {
  return load_params(load_safetensors(path), path, layout);
}

std::vector<float> load_params(const TensorFile& file, const fs::path& path,
                               const ParamLayout& layout) {
  std::vector<float> flat(layout.total());
  for (const auto& v : layout.views()) {
    auto it = file.tensors.find(v.name);
    if (it == file.tensors.end())
      throw Error(fmt::format("{}: no tensor '{}' (the checkpoint is for another model?)",
                              path.string(), v.name));
    if (it->second.shape != v.shape)
      throw Error(fmt::format("{}: tensor '{}' has shape [{}], the model expects [{}]",
                              path.string(), v.name, fmt::join(it->second.shape, ","),
                              fmt::join(v.shape, ",")));
    std::copy(it->second.values.begin(), it->second.values.end(), flat.begin() + v.offset);
  }
  // a file with more tensors was saved for a larger model whose first layers fit this one's
  std::vector<std::string> extra;
  // (no structured binding: clang 14, the fuzz build's, lets no lambda capture one)
  for (const auto& tensor : file.tensors)
    if (std::ranges::none_of(layout.views(), [&](const auto& v) { return v.name == tensor.first; }))
      extra.push_back(tensor.first);
  if (!extra.empty())
    throw Error(fmt::format(
        "{}: holds tensor(s) the model does not have: {} (it was saved for another model, or "
        "other widths)",
        path.string(), fmt::join(extra, ", ")));
  return flat;
}

}  // namespace fedpar
