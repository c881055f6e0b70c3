// Error feedback (Seide et al. 2014; Stich et al. 2018; Karimireddy et al. 2019): each sender
// keeps what compression dropped and adds it to its next update, so nothing is lost, only
// delayed. Around any codec: p = e + g; send C(p); e <- p - D(C(p)). One residual per virtual
// client. Definitions: docs/definitions.md#error-feedback.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(const Codec& codec) : codec_(codec) {}

  // Encodes g plus `client`'s residual into `out` and keeps the new residual. `lr` is the
  // learning rate the receiver will apply to the decoded update (1 for model deltas): when it
  // differs from the previous call's, the residual is first rescaled by old / new, so the step
  // the residual stands for is kept. When p or its decoding holds NaN or Inf the residual stays
  // as it was (the receiver refuses that update anyway). The codec must be contractive
  // (||p - D(C(p))|| < ||p||), or the residual grows without bound.
  void encode(uint32_t client, std::span<const float> g, const CodecContext& ctx, float lr,
              std::vector<uint8_t>& out);

  // The residual `client` carries (empty before its first update), valid until the next encode.
  std::span<const float> residual(uint32_t client) const;
  // The learning rate its residual stands for (0 before its first update).
  float residual_lr(uint32_t client) const;
  // A checkpoint's residual and rate back in place.
  void restore(uint32_t client, std::span<const float> e, float lr);

 private:
  struct State {
    std::vector<float> e;
    float lr = 0;
  };
  const Codec& codec_;
  std::map<uint32_t, State> state_;
  std::vector<float> p_;        // e + g, then the new residual: swapped with the state's e
  std::vector<float> decoded_;  // scratch for the codecs that decode to subtract
};

}  // namespace fedpar
