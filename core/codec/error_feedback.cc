// Error feedback; see error_feedback.h.
#include "core/codec/error_feedback.h"

#include <cmath>

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
  p_.resize(g.size());
  bool finite = true;
  for (size_t i = 0; i < g.size(); ++i) {
    p_[i] = st.e[i] + g[i];
    finite &= std::isfinite(p_[i]);
  }
  decoded_.resize(g.size());
  round_trip(codec_, p_, ctx, out, decoded_);
  for (float v : decoded_) finite &= std::isfinite(v);  // e.g. a norm that overflowed
  if (!finite) return;
  for (size_t i = 0; i < g.size(); ++i) st.e[i] = p_[i] - decoded_[i];
}

std::span<const float> ErrorFeedback::residual(uint32_t client) const {
  const auto it = state_.find(client);
  return it == state_.end() ? std::span<const float>{} : std::span<const float>(it->second.e);
}

}  // namespace fedpar
