// The seed's delay model of a synchronous data-parallel round (parameter server, gradient regime),
// fitted to the measured per-round records:
//   T(N) = compute(B/N) + upload(N m) + aggregate(N m) + broadcast(N m)
// The records time each part of a round on its own (the slowest process's compute, the server's
// broadcast, the rest of its wait, its aggregation), so each term is fitted by least squares over
// all rounds to the part it models (least absolute deviations: see least_squares), and the round's
// prediction is their sum:
//   compute   = c_0 + c_s x (samples per process: B/N)              [the seed's form]
//   compute   = c_0 + c_s x B / min(N, P)                           [cores-aware: P cores]
//   exchange  = e_0 + bytes up / bw_up + bytes down / bw_down       [one bw when they are
//   collinear] aggregate = a_0 + a x (update bytes: N m) broadcast = b_0 + bytes down / bw_b
//   [handing the TASK to the socket]
// The measured round time is the server's wait (broadcast, compute and exchange) + aggregation, as
// in the report's results table. A term whose regressor is constant (one N only) or collinear with
// another cannot be identified: the fit says so instead of inventing a number.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/run_records.h"

namespace fedpar {

// One parameter-server or model-averaging round, reduced to what the model uses (seconds, bytes).
struct DelayRound {
  double processes = 0;        // N: the processes that hosted the round's clients
  double samples = 0;          // B: samples processed by all the round's clients
  double process_samples = 0;  // the samples of the process with the slowest compute (B/N)
  double compute = 0;          // the slowest process's compute (its clients one after another)
  double broadcast = 0;        // handing the TASK to the socket
  double exchange = 0;         // the rest of the wait: max(0, wait - broadcast - compute)
  double aggregate = 0;        // the server's reduction and update
  double bytes_down = 0;       // the round's TASKs, all processes
  double bytes_up = 0;         // the round's updates, all clients (diagnostic extras left out)
  double round = 0;            // measured: the server's wait + aggregation
};

// Throws Error naming the round when a field its kind always carries is missing; nullopt for a
// round without per-client updates (master, allreduce, async, or no client available).
std::optional<DelayRound> delay_round(const RoundRecord& r);
std::vector<DelayRound> read_delay_rounds(const std::filesystem::path& run_dir);

// y = sum_j coef[j] x_j by least squares (columns given whole: an intercept is a column of ones).
// robust: least absolute deviations instead (the conditional median, solved as iteratively
// reweighted least squares), which a few stalled rounds cannot drag: the delay model uses it,
// since it is compared with median round times and a shared machine's rounds are heavy-tailed.
struct LeastSquares {
  std::vector<double> coef;          // empty when not identified
  std::vector<size_t> unidentified;  // columns constant or collinear with the others
  double r2 = 0;                     // NaN when y does not vary
  bool identified() const { return !coef.empty(); }
};
LeastSquares least_squares(const std::vector<std::vector<double>>& columns,
                           const std::vector<double>& y, bool robust = false);

// The fitted model, SI units. A term not identified has its reason in `why` and no coefficients.
struct DelayFit {
  int cores = 0;  // P
  // compute: [0] the seed's form (B/N), [1] cores-aware (B / min(N, P))
  double compute_fixed[2] = {0, 0}, compute_per_sample[2] = {0, 0}, compute_r2[2] = {0, 0};
  bool cores_aware = false;  // [1] identified (not when B / min(N, P) is the same in every round)
  bool separate_links = false;  // bw_up and bw_down fitted apart (else one over both directions)
  double exchange_fixed = 0, exchange_per_byte_up = 0, exchange_per_byte_down = 0, exchange_r2 = 0;
  double aggregate_fixed = 0, aggregate_per_byte = 0, aggregate_r2 = 0;
  double broadcast_fixed = 0, broadcast_per_byte = 0, broadcast_r2 = 0;
  double round_r2[2] = {0, 0};  // of the predicted round time, over all rounds
  size_t rounds = 0;
  std::vector<std::string> why;    // terms not identified; empty when the whole model is fitted
  std::vector<std::string> notes;  // what the records could not separate, and what was fitted
  bool ok() const { return why.empty(); }
};
DelayFit fit_delay_model(const std::vector<DelayRound>& rounds, int cores);

// The model's terms for one round; variant 0 the seed's compute, 1 the cores-aware one.
struct DelayTerms {
  double compute = 0, exchange = 0, aggregate = 0, broadcast = 0;
  double round() const { return compute + exchange + aggregate + broadcast; }
};
DelayTerms predict(const DelayFit& f, const DelayRound& x, int variant);

// Per N: medians over its rounds of the measured parts and the predicted ones.
struct DelayRow {
  double processes = 0, process_samples = 0;
  size_t rounds = 0;
  DelayTerms measured;  // medians of each part
  double measured_round = 0;
  DelayTerms predicted[2];  // medians of each predicted part (per variant)
  double predicted_round[2] = {0, 0};
  double error(int variant) const { return predicted_round[variant] / measured_round - 1; }
};
std::vector<DelayRow> delay_rows(const DelayFit& f, const std::vector<DelayRound>& rounds);

// The report's "Delay model" section, its text generated from the numbers; with a non-empty `dir`
// it also draws dir/plots/delay-model.svg (predicted and measured round time per N).
// load_average >= 0 (the machine's 1-minute load when the runs ended) is quoted beside the cores.
std::string delay_model_markdown(const std::vector<DelayRound>& rounds, int cores,
                                 const std::filesystem::path& dir = {},
                                 const std::string& title = "", double load_average = -1);
nlohmann::json delay_model_json(const std::vector<DelayRound>& rounds, int cores);

}  // namespace fedpar
