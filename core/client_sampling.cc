// sample_round and sampled_weight; see client_sampling.h.
#include "core/client_sampling.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {
namespace {

uint64_t total_weight(std::span<const uint64_t> weights) {
  const uint64_t total = std::accumulate(weights.begin(), weights.end(), uint64_t{0});
  FEDPAR_CHECK(total > 0) << "client sampling needs a client of positive weight";
  return total;
}

// K draws with replacement: each picks the client whose slice of [0, sum) holds an integer
// drawn uniformly there, so P(k) = weights[k] / sum exactly.
RoundSample draw_with_replacement(std::span<const uint64_t> weights, size_t k, Rng& rng) {
  std::vector<uint64_t> upto(weights.size());
  std::partial_sum(weights.begin(), weights.end(), upto.begin());
  std::vector<uint32_t> times(weights.size(), 0);
  for (size_t d = 0; d < k; ++d) {
    const uint64_t x = rng.below(upto.back());
    ++times[size_t(std::upper_bound(upto.begin(), upto.end(), x) - upto.begin())];
  }
  RoundSample out;
  for (uint32_t c = 0; c < times.size(); ++c)
    if (times[c] > 0) out.clients.push_back(c), out.draws.push_back(times[c]);
  return out;
}

}  // namespace

const char* client_sampling_name(ClientSampling s) {
  return s == ClientSampling::kUniform        ? "uniform"
         : s == ClientSampling::kProportional ? "proportional"
         : s == ClientSampling::kScaled       ? "scaled"
                                              : "poisson";
}

RoundSample sample_round(ClientSampling s, std::span<const uint64_t> weights, size_t k,
                         uint64_t seed, uint64_t round) {
  FEDPAR_CHECK(k >= 1 && !weights.empty()) << "a round draws at least one of its clients";
  Rng rng(seed, "sample", 0, uint32_t(round));
  RoundSample out;
  if (s == ClientSampling::kProportional) {
    out = draw_with_replacement(weights, k, rng);
  } else if (s == ClientSampling::kPoisson) {  // one coin per client, in id order
    const double q = std::min(1.0, double(k) / double(weights.size()));
    for (uint32_t c = 0; c < weights.size(); ++c)
      if (rng.uniform_double() < q) out.clients.push_back(c);
    out.draws.assign(out.clients.size(), 1);
  } else {
    out.clients.resize(weights.size());
    std::iota(out.clients.begin(), out.clients.end(), 0u);
    if (k < out.clients.size()) {
      rng.choose(std::span(out.clients), k);
      out.clients.resize(k);
    }
    std::sort(out.clients.begin(), out.clients.end());
    out.draws.assign(out.clients.size(), 1);
  }
  if (s != ClientSampling::kUniform) {
    // scaled's K is the clients asked, poisson's q N: min(K, N) both (fewer than K: all)
    const size_t drawn = s == ClientSampling::kProportional ? k : std::min(k, weights.size());
    for (size_t i = 0; i < out.clients.size(); ++i)
      out.weights.push_back(sampled_weight(s, weights, out.clients[i], out.draws[i], drawn));
  }
  return out;
}

RoundSample sample_round(ClientSampling s, std::span<const uint64_t> weights,
                         std::span<const uint32_t> candidates, size_t k, uint64_t seed,
                         uint64_t round) {
  if (candidates.empty()) return {};
  std::vector<uint64_t> theirs;
  for (uint32_t c : candidates) theirs.push_back(weights[c]);
  RoundSample out = sample_round(s, theirs, k, seed, round);
  for (uint32_t& c : out.clients) c = candidates[c];  // their positions, ascending: ids, sorted
  return out;
}

double sampled_weight(ClientSampling s, std::span<const uint64_t> weights, uint32_t client,
                      uint32_t draws, size_t k) {
  FEDPAR_CHECK(s != ClientSampling::kUniform) << "uniform sampling renormalises its weights";
  FEDPAR_CHECK(client < weights.size() && k >= 1)
      << "client " << client << " of " << weights.size();
  if (s == ClientSampling::kProportional) return double(draws) / double(k);
  const double n = double(weights.size());
  return double(weights[client]) / (double(total_weight(weights)) * double(k) / n);
}

}  // namespace fedpar
