// Codecs: how an update (a gradient, a model delta, the model) is encoded on the wire. Decoding is
// pure: it depends only on the bytes, the codec's parameters and the context (round, client), so
// the receiver decodes exactly what the sender meant. Encoding may carry per-client state (PowerSGD
// warm-starts from the client's previous factors), so a sender learns what the receiver will see
// by decoding what it encoded (round_trip; error feedback does), never by encoding twice.
// Definitions: docs/definitions.md#compression.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"

namespace fedpar {

// The wire header's codec field. Numbers are on the wire: never renumber, only add.
enum class CodecId : uint16_t {
  kRawF32 = 0,      // float32 as is (sent without a copy; not a Codec object)
  kF16 = 1,         // IEEE half, round to nearest even
  kBf16 = 2,        // bfloat16, round to nearest even
  kTopK = 3,        // the k largest magnitudes per bucket: delta-coded indices + float32 values
  kRandK = 4,       // k values at indices every client draws alike from (seed, round)
  kQsgd = 5,        // QSGD: per bucket a float32 norm + packed sign and level, stochastic rounding
  kScaledSign = 6,  // EF-signSGD: ||v||_1 / d, then one sign bit per value
  kSign = 7,        // one sign bit per value, no scale (signSGD; the server takes a majority vote)
  kPowerSgd = 8,    // PowerSGD: per matrix the rank-r factors P, Q as float32; the rest raw
};
constexpr uint16_t kCodecIdCount = 9;
const char* codec_id_name(CodecId id);  // "topk", or "unknown"

struct CodecParams {
  double ratio = 0.01;    // top-k, random-k: the fraction of values kept per bucket
  uint32_t levels = 4;    // QSGD: s, the number of positive levels
  uint32_t bucket = 512;  // QSGD: values per norm (the last bucket may be shorter)
  uint64_t seed = 1;      // the run seed; random draws derive from (seed, codec, round[, client])
  uint32_t topk_bucket = 0;     // top-k: values per selection (0: the whole vector)
  uint32_t rank = 2;            // PowerSGD: r, the columns of the factors P and Q
  bool randk_unbiased = false;  // random-k: decode the values times d / k (E[D(C(v))] = v)
  // PowerSGD: the shapes of the tensors the vector holds, in order (the model's ParamLayout, set
  // by whoever holds the model: with_layout); the config does not name them.
  std::vector<std::vector<int64_t>> shapes;
};

// `p` with the shapes of `layout`'s tensors.
CodecParams with_layout(CodecParams p, const ParamLayout& layout);

// What a vector's encoding may depend on besides its values (the message header carries both).
// The server's downlink draws from a stream of its own (kDownlink, an id no client has), not from
// client 0's: its rounding must not be correlated with that client's uplink in the same round.
struct CodecContext {
  static constexpr uint32_t kDownlink = 0xffffffff;
  uint64_t round = 0;
  uint32_t client = 0;
};

class Codec {
 public:
  virtual ~Codec() = default;
  virtual CodecId id() const = 0;
  const char* name() const { return codec_id_name(id()); }
  // Replaces `out` with the encoding of `v`. May update per-client state (const: the state is
  // the encoder's memory, not its parameters), so two calls may give different bytes.
  virtual void encode(std::span<const float> v, const CodecContext& ctx,
                      std::vector<uint8_t>& out) const = 0;
  // Decodes `bytes` into `out` (the receiver knows the length). Returns "" or why `bytes` is not
  // an encoding of out.size() values; never throws and never reads past `bytes`, since they come
  // from a peer. Values may still be non-finite: the caller checks those.
  virtual std::string decode(std::span<const uint8_t> bytes, const CodecContext& ctx,
                             std::span<float> out) const = 0;
  // True when the decoded sum of encodings is the encoding of the sum, index by index (casts,
  // random-k with the shared seed): the codecs a ring all-reduce may carry.
  virtual bool summable() const { return false; }
  // Error feedback's residual: replaces p with p - D(bytes), bit for bit what decoding `bytes`
  // (this codec's encoding of p in ctx) and subtracting would give. Returns false, p then
  // unspecified, when the decoding holds a NaN or Inf. The default decodes into `scratch`; sparse
  // codecs touch only the values they sent.
  virtual bool subtract_decoded(std::span<const uint8_t> bytes, const CodecContext& ctx,
                                std::span<float> p, std::vector<float>& scratch) const;
};

// The codecs a receiver decodes, by wire id (raw float32 needs none: it is always accepted).
class CodecSet {
 public:
  void add(std::unique_ptr<Codec> c);  // null ("none") adds nothing
  const Codec* find(CodecId id) const;
  bool empty() const { return codecs_.empty(); }

 private:
  std::vector<std::unique_ptr<Codec>> codecs_;
};

// Throws Error naming the valid names or the bad parameter (shapes are not checked here).
void check_codec_params(std::string_view name, const CodecParams& params);
// "none" gives null (raw float32). Throws as check_codec_params, and for powersgd without shapes.
std::unique_ptr<Codec> make_codec(std::string_view name, const CodecParams& params);
std::vector<std::string> codec_names();  // "none" first

// D(C(v)) into `out`: what the receiver will see of v. `scratch` holds the encoding.
void round_trip(const Codec& c, std::span<const float> v, const CodecContext& ctx,
                std::vector<uint8_t>& scratch, std::span<float> out);

}  // namespace fedpar
