// Per-round diagnostics of the client updates (the research signals next to the loss curves):
//   update norms ||u_k||;
//   mean pairwise cosine of the updates, over pairs k < l, from ||sum_k u_k/||u_k|| ||^2 in O(K m);
//   gradient diversity  sum_k ||u_k||^2 / ||sum_k u_k||^2  (Yin et al. 2018; 1/K when all agree,
//   large when they cancel).
// Accumulated in double; zero-norm updates are left out of the cosine.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "server/strategy.h"

namespace fedpar {

struct UpdateDiagnostics {
  std::vector<double> norms;  // per update, in the order given
  // none with fewer than two non-zero updates (no pair to compare; 0 would read "orthogonal")
  std::optional<double> mean_pairwise_cosine;
  double gradient_diversity = 0.0;  // 0 when the sum is zero
};

UpdateDiagnostics diagnose_updates(std::span<const ClientUpdate> updates);

// How far w is from a reference a, in double: max_i |w_i - a_i| and ||w - a|| / ||a|| (the
// absolute norm when a is zero). Weight divergence between paired runs is `relative`.
struct Distance {
  double max_abs = 0, relative = 0;
};
Distance distance(std::span<const float> w, std::span<const float> a);

// A model-averaging round's drift: the distance between the weighted average of the client deltas
// and that of their linear updates (K steps of the gradient at the sent model, LocalResult::linear)
// relative to the latter; both averaged as the strategy averages. Exactly 0 at K = 1.
double update_drift(std::span<const ClientUpdate> deltas, std::span<const ClientUpdate> linear,
                    Weighting w);

}  // namespace fedpar
