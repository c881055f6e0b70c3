// Per-round diagnostics of the client updates (the research signals next to the loss curves):
//   update norms ||u_k||;
//   mean pairwise cosine of the updates, over pairs k < l, from ||sum_k u_k/||u_k|| ||^2 in O(K m);
//   gradient diversity  sum_k ||u_k||^2 / ||sum_k u_k||^2  (Yin et al. 2018; 1/K when all agree,
//   large when they cancel).
// Accumulated in double; zero-norm updates are left out of the cosine.
#pragma once

#include <span>
#include <vector>

#include "server/strategy.h"

namespace fedpar {

struct UpdateDiagnostics {
  std::vector<double> norms;          // per update, in the order given
  double mean_pairwise_cosine = 0.0;  // 0 with fewer than two non-zero updates
  double gradient_diversity = 0.0;    // 0 when the sum is zero
};

UpdateDiagnostics diagnose_updates(std::span<const ClientUpdate> updates);

}  // namespace fedpar
