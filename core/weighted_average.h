// How client updates are weighted and reduced, below both the server's strategies and the ring's
// workers so that every side computes it one way: in double, in client-id order (never arrival
// order), rounded to float once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fedpar {

struct ClientUpdate {
  uint32_t client = 0;
  uint64_t round = 0;
  uint64_t num_samples = 0;       // n_k: samples behind this update
  std::span<const float> values;  // a gradient or a model delta, same layout as the params
  double scale = 1;  // multiplies its raw weight: a client sampling scheme's (client_sampling.h)
};

// n_k / sum n_k, 1 / K, or 1 (kSum: the updates are already parts of one mean, as the `master`
// topology's per-worker gradients are).
enum class Weighting { kBySamples, kUniform, kSum };

// An update's weight before normalisation: n_k, or 1.
inline double raw_weight(Weighting w, uint64_t num_samples) {
  return w == Weighting::kBySamples ? double(num_samples) : 1.0;
}

// sum_k w_k v_k / norm, accumulated in double in the order given and rounded once; w_k is the
// raw weight times the update's scale, norm is sum_k w_k (kSum: 1). Throws Error when sizes differ,
// weights sum to zero, or updates are not sorted by client id.
std::vector<float> weighted_average(std::span<const ClientUpdate> updates, Weighting w);
// The same into `out` (resized; its storage is reused, so a caller that reduces every round keeps
// one model-sized buffer instead of mapping and faulting in a fresh one each time).
void weighted_average(std::span<const ClientUpdate> updates, Weighting w, std::vector<float>& out);

// sum_k w_k v_k without the normalisation (raw weights n_k or 1): one worker's part of a sum that
// others complete (the ring all-reduce divides by the total weight after summing the parts).
std::vector<float> weighted_sum(std::span<const ClientUpdate> updates, Weighting w);

}  // namespace fedpar
