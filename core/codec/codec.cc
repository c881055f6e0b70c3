// The codec registry and names; see codec.h.
#include "core/codec/codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/codec/casts.h"
#include "core/codec/powersgd.h"
#include "core/codec/qsgd.h"
#include "core/codec/randk.h"
#include "core/codec/sign.h"
#include "core/codec/topk.h"
#include "core/spelling.h"

namespace fedpar {

const char* codec_id_name(CodecId id) {
  switch (id) {
    case CodecId::kRawF32:
      return "none";
    case CodecId::kF16:
      return "fp16";
    case CodecId::kBf16:
      return "bf16";
    case CodecId::kTopK:
      return "topk";
    case CodecId::kRandK:
      return "randk";
    case CodecId::kQsgd:
      return "qsgd";
    case CodecId::kScaledSign:
      return "scaled_sign";
    case CodecId::kSign:
      return "sign";
    case CodecId::kPowerSgd:
      return "powersgd";
  }
  return "unknown";
}

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (uint16_t i = 0; i < kCodecIdCount; ++i) names.emplace_back(codec_id_name(CodecId(i)));
  return names;
}

CodecParams with_layout(CodecParams p, const ParamLayout& layout) {
  p.shapes.clear();
  for (const ParamView& v : layout.views()) p.shapes.push_back(v.shape);
  return p;
}

void check_codec_params(std::string_view name, const CodecParams& p) {
  const auto names = codec_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw Error(fmt::format("unknown codec '{}'{} (valid: {})", name, did_you_mean(name, names),
                            fmt::join(names, ", ")));
  if ((name == "topk" || name == "randk") && !(p.ratio > 0 && p.ratio <= 1))
    throw Error(fmt::format("compression.ratio must be in (0, 1] for {}, got {}", name, p.ratio));
  if (name == "qsgd" && (p.levels < 1 || p.levels > 127))
    throw Error(fmt::format("qsgd levels must be in 1..127, got {}", p.levels));
  if (name == "qsgd" && p.bucket < 1) throw Error("qsgd bucket must be >= 1");
  if (name == "powersgd" && (p.rank < 1 || p.rank > kPowerSgdMaxRank))
    throw Error(fmt::format("powersgd rank must be in 1..{}, got {}", kPowerSgdMaxRank, p.rank));
}

std::unique_ptr<Codec> make_codec(std::string_view name, const CodecParams& p) {
  check_codec_params(name, p);
  if (name == "none") return nullptr;
  if (name == "fp16") return make_f16_codec();
  if (name == "bf16") return make_bf16_codec();
  if (name == "topk") return make_topk_codec(p);
  if (name == "randk") return make_randk_codec(p);
  if (name == "qsgd") return make_qsgd_codec(p);
  if (name == "scaled_sign") return make_scaled_sign_codec();
  if (name == "sign") return make_sign_codec();
  if (name == "powersgd") return make_powersgd_codec(p);
  throw Error(fmt::format("unknown codec '{}' (valid: {})", name, fmt::join(codec_names(), ", ")));
}

void CodecSet::add(std::unique_ptr<Codec> c) {
  if (c && !find(c->id())) codecs_.push_back(std::move(c));
}

const Codec* CodecSet::find(CodecId id) const {
  for (const auto& c : codecs_)
    if (c->id() == id) return c.get();
  return nullptr;
}

bool Codec::subtract_decoded(std::span<const uint8_t> bytes, const CodecContext& ctx,
                             std::span<float> p, std::vector<float>& scratch) const {
  scratch.resize(p.size());
  const std::string why = decode(bytes, ctx, scratch);
  FEDPAR_CHECK(why.empty()) << name() << " cannot decode its own encoding: " << why;
  uint32_t nonfinite = 0;  // exponent all ones: NaN or Inf (a bit test, so the loop vectorizes)
  for (size_t i = 0; i < p.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &scratch[i], 4);
    nonfinite |= uint32_t((b & 0x7F800000u) == 0x7F800000u);
    p[i] -= scratch[i];
  }
  return nonfinite == 0;
}

void round_trip(const Codec& c, std::span<const float> v, const CodecContext& ctx,
                std::vector<uint8_t>& scratch, std::span<float> out) {
  FEDPAR_CHECK(out.size() == v.size())
      << "round_trip: output of " << out.size() << " for " << v.size() << " values";
  c.encode(v, ctx, scratch);
  const std::string why = c.decode(scratch, ctx, out);
  FEDPAR_CHECK(why.empty()) << c.name() << " cannot decode its own encoding: " << why;
}

}  // namespace fedpar
