// Robust aggregation; see robust_aggregate.h.
#include "core/robust_aggregate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/named_choices.h"

namespace fedpar {
namespace {

constexpr NamedChoice<AggregateRule> kRules[] = {{AggregateRule::kMean, "mean"},
                                                 {AggregateRule::kMedian, "median"},
                                                 {AggregateRule::kTrimmedMean, "trimmed-mean"},
                                                 {AggregateRule::kKrum, "krum"},
                                                 {AggregateRule::kMultiKrum, "multi-krum"}};

// Per coordinate: the sorted values of every update, reduced by `reduce`.
template <typename Reduce>
void per_coordinate(std::span<const ClientUpdate> updates, std::vector<float>& out, Reduce reduce) {
  const size_t n = updates.size(), dim = updates[0].values.size();
  out.resize(dim);
  std::vector<float> column(n);
  for (size_t i = 0; i < dim; ++i) {
    for (size_t k = 0; k < n; ++k) column[k] = updates[k].values[i];
    std::sort(column.begin(), column.end());
    out[i] = float(reduce(column));
  }
}

// The indices of the `m` lowest Krum scores, lowest first (ties: the lower index).
std::vector<size_t> lowest_scores(std::span<const ClientUpdate> updates, int byzantine, size_t m) {
  const std::vector<double> score = krum_scores(updates, byzantine);
  std::vector<size_t> order(score.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return score[a] < score[b]; });
  order.resize(m);
  return order;
}

}  // namespace

AggregateRule parse_aggregate_rule(const std::string& name) {
  return parse_choice<AggregateRule>(kRules, name, "aggregation rule");
}

size_t trimmed_cut(double trim, size_t n) { return size_t(std::floor(trim * double(n) + 1e-9)); }

const char* aggregate_rule_name(AggregateRule r) { return choice_name<AggregateRule>(kRules, r); }

std::vector<double> krum_scores(std::span<const ClientUpdate> updates, int byzantine) {
  const size_t n = updates.size();
  if (byzantine < 0 || n <= 2 * size_t(byzantine) + 2)
    throw Error(fmt::format("krum with f = {} needs more than 2 f + 2 = {} updates, got {}",
                            byzantine, 2 * byzantine + 2, n));
  std::vector<std::vector<double>> d2(n, std::vector<double>(n, 0.0));
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      double s = 0;
      for (size_t i = 0; i < updates[a].values.size(); ++i) {
        const double d = double(updates[a].values[i]) - double(updates[b].values[i]);
        s += d * d;
      }
      d2[a][b] = d2[b][a] = s;
    }
  const size_t nearest = n - size_t(byzantine) - 2;
  std::vector<double> score(n);
  for (size_t a = 0; a < n; ++a) {
    std::vector<double> others;
    for (size_t b = 0; b < n; ++b)
      if (b != a) others.push_back(d2[a][b]);
    std::sort(others.begin(), others.end());
    score[a] = std::accumulate(others.begin(), others.begin() + long(nearest), 0.0);
  }
  return score;
}

MedianFallback median_fallback(const RobustOptions& o) {
  if (o.rule == AggregateRule::kKrum || o.rule == AggregateRule::kMultiKrum)
    return {2 * size_t(o.byzantine) + 2,
            fmt::format("(2 f + 2, f = robust.byzantine = {})", o.byzantine)};
  if (o.rule == AggregateRule::kTrimmedMean && o.trim > 0) {
    auto most = size_t(std::max(0.0, 1.0 / o.trim - 2));  // at most the answer
    while (trimmed_cut(o.trim, most + 1) == 0) ++most;
    return {most, fmt::format("(robust.trim = {:g} cuts floor(trim n) = 0 of them: the plain mean)",
                              o.trim)};
  }
  return {0, ""};
}

bool falls_back_to_median(const RobustOptions& o, size_t n) { return n <= median_fallback(o).most; }

double l2_norm(std::span<const float> v) {
  double sq = 0;
  for (float x : v) sq += double(x) * double(x);
  return std::sqrt(sq);
}

void robust_aggregate(std::span<const ClientUpdate> updates, Weighting w, const RobustOptions& o,
                      std::vector<float>& out) {
  FEDPAR_CHECK(!updates.empty()) << "nothing to aggregate";
  std::vector<std::vector<float>> clipped;  // owns the clipped copies
  std::vector<ClientUpdate> view(updates.begin(), updates.end());
  if (o.clip_norm > 0) {
    clipped.reserve(view.size());
    for (ClientUpdate& u : view) {
      const double norm = l2_norm(u.values);
      if (norm <= o.clip_norm) continue;
      auto& c = clipped.emplace_back(u.values.begin(), u.values.end());
      const double s = o.clip_norm / norm;
      for (float& v : c) v = float(double(v) * s);
      u.values = c;
    }
  }
  switch (o.rule) {
    case AggregateRule::kMean:
      return weighted_average(view, w, out);
    case AggregateRule::kMedian:
      return per_coordinate(view, out, [](const std::vector<float>& c) {
        const size_t n = c.size();
        return n % 2 ? double(c[n / 2]) : 0.5 * (double(c[n / 2 - 1]) + double(c[n / 2]));
      });
    case AggregateRule::kTrimmedMean: {
      if (falls_back_to_median(o, view.size()))  // clients went missing: it would cut none
        return robust_aggregate(view, w, {.rule = AggregateRule::kMedian}, out);
      const size_t cut = trimmed_cut(o.trim, view.size());
      if (2 * cut >= view.size())
        throw Error(
            fmt::format("trimmed-mean with trim = {} cuts all {} updates", o.trim, view.size()));
      return per_coordinate(view, out, [cut](const std::vector<float>& c) {
        double s = 0;
        for (size_t k = cut; k < c.size() - cut; ++k) s += double(c[k]);
        return s / double(c.size() - 2 * cut);
      });
    }
    case AggregateRule::kKrum:
    case AggregateRule::kMultiKrum:
      if (falls_back_to_median(o, view.size()))  // clients went missing this round
        return robust_aggregate(view, w, {.rule = AggregateRule::kMedian}, out);
      break;
  }
  switch (o.rule) {
    case AggregateRule::kKrum: {
      const size_t best = lowest_scores(view, o.byzantine, 1)[0];
      out.assign(view[best].values.begin(), view[best].values.end());
      return;
    }
    case AggregateRule::kMultiKrum: {
      const size_t m = std::min(o.select > 0 ? size_t(o.select) : view.size(),
                                view.size() - size_t(o.byzantine));
      std::vector<size_t> chosen = lowest_scores(view, o.byzantine, m);
      std::sort(chosen.begin(), chosen.end());  // client order, as every reduction
      std::vector<ClientUpdate> kept;
      for (size_t k : chosen) kept.push_back(view[k]);
      // unweighted: a kept attacker must not weigh more by claiming more samples
      return weighted_average(kept, Weighting::kUniform, out);
    }
    default:
      return;
  }
}

}  // namespace fedpar
