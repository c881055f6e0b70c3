// Which clients a synchronous round asks, and what their updates weigh. FedAvg as usually run
// draws K of the N clients alike and renormalises n_k over those it hears from, which in
// expectation is not the full-participation average sum_k p_k v_k when the p_k differ. Li et al.
// (2020, "On the Convergence of FedAvg on Non-IID Data") give two schemes that are unbiased; the
// round's weights then sum to 1 only on average, so they are applied as given (Weighting::kSum).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fedpar {

enum class ClientSampling {
  kUniform,       // K distinct clients alike; weights renormalised over the updates aggregated
  kProportional,  // K draws with replacement, P(k) = p_k; each draw weighs 1/K (scheme I)
  kScaled,  // K distinct clients alike (uniform's draw); an update weighs p_k N / K (scheme II)
  // each client independently with probability q = K / N, so a round's count varies about K; an
  // update weighs p_k N / K as under kScaled (DP-FedAvg's draw, whose privacy accounting needs it)
  kPoisson,
};

// "uniform", "proportional", "scaled", "poisson": the config's word.
const char* client_sampling_name(ClientSampling s);

struct RoundSample {
  std::vector<uint32_t> clients;  // sorted, each once
  std::vector<uint32_t> draws;    // for each of `clients`: times drawn (1 but in kProportional)
  std::vector<double> weights;    // for each: its update's weight (sampled_weight); kUniform: none
};

// The round's K = `k` draws among the run's clients, whose raw weights (n_k, or 1 under
// weighting = "uniform") are `weights`: p_k = weights[k] / sum. From (seed, "sample", round), so
// kUniform and kScaled ask the same clients in the same round.
RoundSample sample_round(ClientSampling s, std::span<const uint64_t> weights, size_t k,
                         uint64_t seed, uint64_t round);
// The same among `candidates` only (sorted client ids, e.g. the round's available clients): p_k
// and N are theirs, and kScaled's K is at most their count. None: an empty sample.
RoundSample sample_round(ClientSampling s, std::span<const uint64_t> weights,
                         std::span<const uint32_t> candidates, size_t k, uint64_t seed,
                         uint64_t round);

// What the update of a client drawn `draws` times weighs in a round of `k` draws: kProportional
// draws / K, kScaled and kPoisson p_k N / K (written weights[c] / (sum K / N), so with every client
// asked it is weights[c] / sum to the last bit, as kUniform's renormalisation gives when all of
// them answer and each update's n_k is its shard's size: model averaging, full-batch gradients).
// kUniform has no fixed weight: throws.
double sampled_weight(ClientSampling s, std::span<const uint64_t> weights, uint32_t client,
                      uint32_t draws, size_t k);

}  // namespace fedpar
