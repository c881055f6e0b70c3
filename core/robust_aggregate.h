// Byzantine-robust aggregation: rules that reduce the clients' updates (gradients or model
// deltas) so that a few arbitrary ones cannot move the result far, used by the server's
// strategies in place of the weighted mean. Deterministic: the updates arrive sorted by client id
// and ties go to the lower id. Defined in docs/definitions.md#robust-aggregation.
//   mean          the run's weighted mean (weighted_average.h)
//   median        the coordinate-wise median (the mean of the middle two for an even count)
//   trimmed-mean  per coordinate, drop the floor(trim n) largest and smallest values, average the
//                 rest (Yin et al. 2018)
//   krum          the update whose n - f - 2 nearest others are closest in squared L2
//                 (Blanchard et al. 2017); needs n > 2 f + 2
//   multi-krum    the plain mean of the `select` updates with the lowest Krum scores (unweighted:
//                 a kept attacker cannot weigh more by claiming more samples)
// Krum and Multi-Krum fall back to the median in a round with n <= 2 f + 2 (clients missing or
// left out late); the round's record says so (`robust_fallback`).
// clip_norm > 0 first scales every update to at most that L2 norm (norm clipping).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/weighted_average.h"

namespace fedpar {

enum class AggregateRule { kMean, kMedian, kTrimmedMean, kKrum, kMultiKrum };

// "mean" | "median" | "trimmed-mean" | "krum" | "multi-krum"; throws Error naming them otherwise.
AggregateRule parse_aggregate_rule(const std::string& name);
const char* aggregate_rule_name(AggregateRule r);
// How many of n values trimmed-mean cuts from each end: floor(trim n) (the 1e-9 keeps 0.2 x 5 at
// 1).
size_t trimmed_cut(double trim, size_t n);

struct RobustOptions {
  AggregateRule rule = AggregateRule::kMean;
  double trim = 0.1;     // trimmed-mean: the share cut from each end
  int byzantine = 1;     // krum, multi-krum: f, the attackers the rule tolerates
  int select = 0;        // multi-krum: m updates averaged (0 or more than n - f: n - f)
  double clip_norm = 0;  // > 0: every update scaled to at most this L2 norm first
};

// The L2 norm of `v`, summed in double: what clip_norm bounds.
double l2_norm(std::span<const float> v);

// The aggregate of `updates` (at least one, equal sizes) into `out`. Krum and multi-Krum with
// n <= 2 f + 2 updates, and trimmed-mean with so few that it cuts none (clients went missing this
// round, which the run's config check cannot foresee), fall back to the coordinate median.
void robust_aggregate(std::span<const ClientUpdate> updates, Weighting w, const RobustOptions& o,
                      std::vector<float>& out);

// The most updates on which `o`'s rule cannot do its work, and why, "(...)" for the log and the
// run's README: Krum and Multi-Krum 2 f + 2; trimmed-mean (trim > 0) the most it cuts none of;
// 0 for the others.
struct MedianFallback {
  size_t most = 0;
  std::string why;
};
MedianFallback median_fallback(const RobustOptions& o);
// Whether robust_aggregate takes the median instead of `o`'s rule on n updates.
bool falls_back_to_median(const RobustOptions& o, size_t n);

// The Krum score of each update: the sum of its squared L2 distances to its n - f - 2 nearest
// others (in double).
std::vector<double> krum_scores(std::span<const ClientUpdate> updates, int byzantine);

}  // namespace fedpar
