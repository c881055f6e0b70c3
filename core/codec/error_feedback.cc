// Error feedback; see error_feedback.h.
#include "core/codec/error_feedback.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace fedpar {

void ErrorFeedback::encode(uint32_t client, std::span<const float> g, const CodecContext& ctx,
                           float lr, std::vector<uint8_t>& out) {
  FEDPAR_CHECK(lr > 0) << "error feedback needs a positive learning rate, got " << lr;
  State& st = state_[client];
  if (st.e.empty()) st.e.assign(g.size(), 0.0f);
  FEDPAR_CHECK(st.e.size() == g.size())
      << "client " << client << ": an update of " << g.size() << " values after " << st.e.size();
  if (st.lr != 0 && st.lr != lr) {
    const float scale = st.lr / lr;
    for (float& x : st.e) x *= scale;
  }
  st.lr = lr;
  // p = e + g, checked for NaN and Inf in the same pass (a bit test: the loop vectorizes)
  p_.resize(g.size());
  const float* e = st.e.data();
  uint32_t nonfinite = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const float x = e[i] + g[i];
    uint32_t b;
    std::memcpy(&b, &x, 4);
    nonfinite |= uint32_t((b & 0x7F800000u) == 0x7F800000u);
    p_[i] = x;
  }
  codec_.encode(p_, ctx, out);
  if (nonfinite) return;
  // p becomes p - D(C(p)) in place (the sparse codecs touch only the values they sent); it is
  // the new residual unless the decoding holds NaN or Inf (e.g. a norm that overflowed), and the
  // old residual's buffer is the next call's p
  if (!codec_.subtract_decoded(out, ctx, p_, decoded_)) return;
  st.e.swap(p_);
}

std::span<const float> ErrorFeedback::residual(uint32_t client) const {
  const auto it = state_.find(client);
  return it == state_.end() ? std::span<const float>{} : std::span<const float>(it->second.e);
}

float ErrorFeedback::residual_lr(uint32_t client) const {
  const auto it = state_.find(client);
  return it == state_.end() ? 0.0f : it->second.lr;
}

void ErrorFeedback::restore(uint32_t client, std::span<const float> e, float lr) {
  state_[client] = State{{e.begin(), e.end()}, lr};
}

}  // namespace fedpar
