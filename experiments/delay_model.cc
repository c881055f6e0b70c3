// The delay model fitted to a suite's rounds; see delay_model.h.
#include "experiments/delay_model.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/check.h"
#include "core/median.h"
#include "experiments/plot.h"

namespace fedpar {
namespace {

constexpr double kTolerance = 0.20;  // |predicted / measured - 1| the model is said to explain
constexpr double kRankThreshold =
    1e-3;  // QR pivots below this (columns scaled to max 1): rank lost

template <typename T>
T need(const std::optional<T>& v, const char* key, const RoundRecord& r) {
  if (!v) throw Error(fmt::format("round {} ({}) has no '{}'", r.round, r.topology, key));
  return *v;
}

double r_squared(const std::vector<double>& y, const std::vector<double>& fit) {
  double mean = 0;
  for (double v : y) mean += v / double(y.size());
  double res = 0, tot = 0;
  for (size_t i = 0; i < y.size(); ++i)
    res += (y[i] - fit[i]) * (y[i] - fit[i]), tot += (y[i] - mean) * (y[i] - mean);
  return tot > 0 ? 1 - res / tot : std::numeric_limits<double>::quiet_NaN();
}

template <typename F>
std::vector<double> column(const std::vector<DelayRound>& rounds, F f) {
  std::vector<double> c;
  for (const auto& r : rounds) c.push_back(f(r));
  return c;
}

// Why a regressor cannot be identified: it is constant, or a combination of the others.
std::string unidentified_why(const std::vector<double>& c, const std::string& name) {
  const auto [lo, hi] = std::minmax_element(c.begin(), c.end());
  if (c.empty()) return fmt::format("{}: no rounds", name);
  return *lo == *hi ? fmt::format("{} takes one value ({:.6g}) in every round", name, *lo)
                    : fmt::format("{} is collinear with the other regressors", name);
}

std::string ms(double s) { return fmt::format("{:.2f}", 1e3 * s); }
std::string r2_cell(double r2) {
  return std::isnan(r2) ? "- (no variation)" : fmt::format("{:.3f}", r2);
}
std::string percent(double e) { return fmt::format("{:+.1f}%", 100 * e); }

// A slope in seconds per byte as a throughput; a slope <= 0 has none.
std::string throughput(double s_per_byte, double unit, const char* name) {
  return s_per_byte > 0 ? fmt::format("{:.0f} {}", 1 / s_per_byte / unit, name)
                        : fmt::format("none (slope {:.3g} s per MB)", s_per_byte * 1e6);
}

std::string joined_n(const std::vector<double>& n) {
  std::string s;
  for (size_t i = 0; i < n.size(); ++i)
    s += (i == 0 ? "" : i + 1 == n.size() ? " and " : ", ") + fmt::format("{:.0f}", n[i]);
  return s;
}

}  // namespace

std::optional<DelayRound> delay_round(const RoundRecord& r) {
  if (!r.clients || r.clients->empty()) return std::nullopt;
  std::map<int64_t, std::pair<double, double>> per_process;  // compute seconds, samples
  DelayRound d;
  for (const ClientRecord& c : *r.clients) {
    per_process[c.process].first += c.compute_seconds;
    per_process[c.process].second += double(c.samples_processed);
    d.samples += double(c.samples_processed);
    d.bytes_up += double(c.bytes_up);
  }
  d.bytes_up -= double(r.diagnostic_bytes_up.value_or(0));
  for (const auto& [proc, cs] : per_process)
    if (cs.first >= d.compute) d.compute = cs.first, d.process_samples = cs.second;
  for (const ProcessRecord& p : r.processes) d.bytes_down += double(p.bytes_down);
  d.processes = double(per_process.size());
  d.broadcast = need(r.broadcast_seconds, "broadcast_seconds", r);
  d.aggregate = need(r.aggregate_seconds, "aggregate_seconds", r);
  d.exchange = std::max(0.0, r.wait_seconds - d.broadcast - d.compute);
  d.round = r.wait_seconds + d.aggregate;
  return d;
}

std::vector<DelayRound> read_delay_rounds(const std::filesystem::path& dir) {
  std::vector<DelayRound> out;
  for (const RoundRecord& r : read_round_records(dir)) try {
      if (auto d = delay_round(r)) out.push_back(*d);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", (dir / "metrics.jsonl").string(), e.what()));
    }
  return out;
}

LeastSquares least_squares(const std::vector<std::vector<double>>& columns,
                           const std::vector<double>& y, bool robust) {
  LeastSquares out;
  const auto n = Eigen::Index(y.size()), k = Eigen::Index(columns.size());
  Eigen::MatrixXd x(n, k);
  Eigen::VectorXd scale(k), yv = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
  for (Eigen::Index j = 0; j < k; ++j) {
    FEDPAR_CHECK(columns[j].size() == y.size()) << "column " << j << " has " << columns[j].size();
    double m = 0;
    for (double v : columns[j]) m = std::max(m, std::abs(v));
    scale(j) = m > 0 ? m : 1;
    for (Eigen::Index i = 0; i < n; ++i) x(i, j) = columns[j][i] / scale(j);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(x);
  qr.setThreshold(kRankThreshold);
  if (n < k || qr.rank() < k) {
    for (Eigen::Index j = std::min(qr.rank(), k); j < k; ++j)
      out.unidentified.push_back(size_t(qr.colsPermutation().indices()(j)));
    std::sort(out.unidentified.begin(), out.unidentified.end());
    return out;
  }
  Eigen::VectorXd beta = qr.solve(yv);
  if (robust) {  // least absolute deviations: least squares reweighted by 1 / |residual|
    const double floor = std::max(1e-300, 1e-9 * yv.cwiseAbs().maxCoeff());
    for (int it = 0; it < 200 && (yv - x * beta).cwiseAbs().maxCoeff() > floor; ++it) {
      const Eigen::VectorXd w =
          (yv - x * beta).cwiseAbs().cwiseMax(floor).cwiseInverse().cwiseSqrt();
      const Eigen::VectorXd next =
          (w.asDiagonal() * x).colPivHouseholderQr().solve(w.asDiagonal() * yv);
      const bool done = (next - beta).norm() <= 1e-12 * std::max(1.0, beta.norm());
      beta = next;
      if (done) break;
    }
  }
  for (Eigen::Index j = 0; j < k; ++j) out.coef.push_back(beta(j) / scale(j));
  const Eigen::VectorXd fit = x * beta;
  out.r2 = r_squared(y, std::vector<double>(fit.data(), fit.data() + n));
  return out;
}

DelayFit fit_delay_model(const std::vector<DelayRound>& rounds, int cores) {
  FEDPAR_CHECK(cores >= 1) << cores;
  DelayFit f;
  f.cores = cores;
  f.rounds = rounds.size();
  if (rounds.empty()) {
    f.why.push_back("no rounds with per-client updates");
    return f;
  }
  const auto ones = column(rounds, [](const DelayRound&) { return 1.0; });
  const auto up = column(rounds, [](const DelayRound& r) { return r.bytes_up; });
  const auto down = column(rounds, [](const DelayRound& r) { return r.bytes_down; });
  // Fits y on [1, x...]; on failure records why (naming the regressors it could not identify).
  auto fit = [&](const char* term, const std::vector<std::vector<double>>& xs,
                 const std::vector<std::string>& names, const std::vector<double>& y) {
    std::vector<std::vector<double>> cols = {ones};
    cols.insert(cols.end(), xs.begin(), xs.end());
    LeastSquares ls = least_squares(cols, y, true);
    if (!ls.identified()) {
      std::string w;
      for (size_t j = 0; j < xs.size(); ++j)  // a slope against the fixed cost
        if (std::count(ls.unidentified.begin(), ls.unidentified.end(), 0) ||
            std::count(ls.unidentified.begin(), ls.unidentified.end(), j + 1))
          w += (w.empty() ? "" : "; ") + unidentified_why(xs[j], names[j]);
      f.why.push_back(fmt::format("{}: {}", term, w));
    }
    return ls;
  };
  const auto compute = column(rounds, [](const DelayRound& r) { return r.compute; });
  const std::vector<double> per_process[2] = {
      column(rounds, [](const DelayRound& r) { return r.process_samples; }),
      column(rounds, [&](const DelayRound& r) {
        return r.samples / std::min(r.processes, double(cores));
      })};
  const char* compute_names[2] = {"compute (the seed's B/N)", "compute (cores-aware B/min(N, P))"};
  for (int v = 0; v < 2; ++v) {
    const size_t why_before = f.why.size();
    auto ls = fit(compute_names[v], {per_process[v]}, {v == 0 ? "B/N" : "B/min(N, P)"}, compute);
    if (ls.identified()) {
      f.compute_fixed[v] = ls.coef[0], f.compute_per_sample[v] = ls.coef[1],
      f.compute_r2[v] = ls.r2;
      f.cores_aware |= v == 1;
    } else if (v == 1) {  // optional: the seed's model stands without it
      f.notes.push_back(f.why.back() + ": the cores-aware variant is left out");
      f.why.resize(why_before);
    }
  }

  const auto exchange = column(rounds, [](const DelayRound& r) { return r.exchange; });
  LeastSquares ex = least_squares({ones, up, down}, exchange, true);
  if (ex.identified()) {
    f.separate_links = true;
    f.exchange_fixed = ex.coef[0], f.exchange_per_byte_up = ex.coef[1],
    f.exchange_per_byte_down = ex.coef[2], f.exchange_r2 = ex.r2;
  } else {
    std::vector<double> both(up.size());
    for (size_t i = 0; i < both.size(); ++i) both[i] = up[i] + down[i];
    ex = fit("exchange", {both}, {"bytes up + down"}, exchange);
    if (ex.identified()) {
      f.notes.push_back(
          "bytes up and bytes down are collinear over these rounds (every process receives the "
          "model and sends an update of the same size), so bw_up and bw_down cannot be told "
          "apart: one throughput over both directions is fitted");
      f.exchange_fixed = ex.coef[0];
      f.exchange_per_byte_up = f.exchange_per_byte_down = ex.coef[1];
      f.exchange_r2 = ex.r2;
    }
  }
  const auto aggregate = column(rounds, [](const DelayRound& r) { return r.aggregate; });
  if (auto ls = fit("aggregation", {up}, {"update bytes (N m)"}, aggregate); ls.identified())
    f.aggregate_fixed = ls.coef[0], f.aggregate_per_byte = ls.coef[1], f.aggregate_r2 = ls.r2;
  const auto broadcast = column(rounds, [](const DelayRound& r) { return r.broadcast; });
  if (auto ls = fit("broadcast", {down}, {"TASK bytes (N m)"}, broadcast); ls.identified())
    f.broadcast_fixed = ls.coef[0], f.broadcast_per_byte = ls.coef[1], f.broadcast_r2 = ls.r2;
  if (!f.ok()) return f;

  const auto measured = column(rounds, [](const DelayRound& r) { return r.round; });
  for (int v = 0; v < (f.cores_aware ? 2 : 1); ++v)
    f.round_r2[v] = r_squared(
        measured, column(rounds, [&](const DelayRound& r) { return predict(f, r, v).round(); }));
  return f;
}

DelayTerms predict(const DelayFit& f, const DelayRound& x, int variant) {
  const double per_process =
      variant == 0 ? x.process_samples : x.samples / std::min(x.processes, double(f.cores));
  return {f.compute_fixed[variant] + f.compute_per_sample[variant] * per_process,
          f.exchange_fixed + f.exchange_per_byte_up * x.bytes_up +
              f.exchange_per_byte_down * x.bytes_down,
          f.aggregate_fixed + f.aggregate_per_byte * x.bytes_up,
          f.broadcast_fixed + f.broadcast_per_byte * x.bytes_down};
}

std::vector<DelayRow> delay_rows(const DelayFit& f, const std::vector<DelayRound>& rounds) {
  std::map<double, std::vector<const DelayRound*>> by_n;
  for (const auto& r : rounds) by_n[r.processes].push_back(&r);
  std::vector<DelayRow> rows;
  for (const auto& [n, rs] : by_n) {
    DelayRow row{.processes = n, .rounds = rs.size()};
    auto med = [&](auto get) {
      std::vector<double> v;
      for (const auto* r : rs) v.push_back(get(*r));
      return median(v);
    };
    row.process_samples = med([](const DelayRound& r) { return r.process_samples; });
    row.measured = {med([](const DelayRound& r) { return r.compute; }),
                    med([](const DelayRound& r) { return r.exchange; }),
                    med([](const DelayRound& r) { return r.aggregate; }),
                    med([](const DelayRound& r) { return r.broadcast; })};
    row.measured_round = med([](const DelayRound& r) { return r.round; });
    for (int v = 0; v < 2; ++v) {
      row.predicted[v] = {med([&](const DelayRound& r) { return predict(f, r, v).compute; }),
                          med([&](const DelayRound& r) { return predict(f, r, v).exchange; }),
                          med([&](const DelayRound& r) { return predict(f, r, v).aggregate; }),
                          med([&](const DelayRound& r) { return predict(f, r, v).broadcast; })};
      row.predicted_round[v] = med([&](const DelayRound& r) { return predict(f, r, v).round(); });
    }
    rows.push_back(row);
  }
  return rows;
}

std::string delay_model_markdown(const std::vector<DelayRound>& rounds, int cores,
                                 const std::filesystem::path& dir, const std::string& title,
                                 double load_average) {
  const DelayFit f = fit_delay_model(rounds, cores);
  std::vector<double> ns;
  for (const auto& r : rounds)
    if (std::find(ns.begin(), ns.end(), r.processes) == ns.end()) ns.push_back(r.processes);
  std::sort(ns.begin(), ns.end());
  std::ostringstream md;
  md << fmt::format(
      "The seed's model of a round, T(N) = compute(B/N) + upload(N m) + aggregate(N m) + "
      "broadcast(N m), fitted over all {} rounds at N = {} processes. T is the "
      "measured round time: the server's wait (its broadcast, the slowest process's compute and "
      "the exchange) + its aggregation, as in the results table, per round. The records time "
      "each part of a round separately, so each term is fitted to its own part: compute against "
      "the slowest process's samples, the exchange against the bytes the round moved, "
      "aggregation against the update bytes the server summed, broadcast against the TASK bytes; "
      "the prediction is their sum. (From T alone only c_0, c_s and one slope in N could be "
      "identified: upload, aggregation and broadcast all grow as N m.) The fit is least absolute "
      "deviations (iteratively reweighted least squares): it fits the median, which is what the "
      "tables compare, and the few rounds a shared machine stalls cannot drag it; ordinary least "
      "squares would fit the mean, stalls included. R² counts every round, stalled ones "
      "too (it is negative where their squared deviations outweigh what the model "
      "explains).\n\n",
      rounds.size(), joined_n(ns));
  if (!f.ok()) {
    md << "Not fitted: these rounds cannot identify ";
    for (size_t i = 0; i < f.why.size(); ++i) md << (i ? "; " : "") << f.why[i];
    md << ".\n\n";
    return md.str();
  }
  const auto rows = delay_rows(f, rounds);
  // some runs had more processes than cores (and the cores-aware variant could be fitted)
  const bool bind = ns.back() > cores && f.cores_aware;
  const int shown = bind ? 2 : 1;

  md << "| term | form | fitted | R² over rounds |\n|---|---|---|---|\n";
  md << fmt::format(
      "| compute{} | c_0 + c_s · B/N | c_s = {:.2f} µs per sample, c_0 = {} ms | {} |\n",
      bind ? " (the seed's)" : "", 1e6 * f.compute_per_sample[0], ms(f.compute_fixed[0]),
      r2_cell(f.compute_r2[0]));
  if (bind)
    md << fmt::format(
        "| compute (cores-aware) | c_0 + c_s · B / min(N, P), P = {} | c_s = {:.2f} µs per "
        "sample, c_0 = {} ms | {} |\n",
        cores, 1e6 * f.compute_per_sample[1], ms(f.compute_fixed[1]), r2_cell(f.compute_r2[1]));
  if (f.separate_links)
    md << fmt::format(
        "| exchange | e_0 + bytes up / bw_up + bytes down / bw_down | bw_up = {}, bw_down = {}, "
        "e_0 = {} ms | {} |\n",
        throughput(f.exchange_per_byte_up, 1e6, "MB/s"),
        throughput(f.exchange_per_byte_down, 1e6, "MB/s"), ms(f.exchange_fixed),
        r2_cell(f.exchange_r2));
  else
    md << fmt::format(
        "| exchange (upload + download) | e_0 + (bytes up + down) / bw | bw = {}, "
        "e_0 = {} ms | {} |\n",
        throughput(f.exchange_per_byte_up, 1e6, "MB/s"), ms(f.exchange_fixed),
        r2_cell(f.exchange_r2));
  md << fmt::format(
      "| aggregation | a_0 + a · update bytes (N m) | a = {:.3f} ns per byte ({}), a_0 = {} ms | "
      "{} |\n",
      1e9 * f.aggregate_per_byte, throughput(f.aggregate_per_byte, 1e6, "MB/s"),
      ms(f.aggregate_fixed), r2_cell(f.aggregate_r2));
  md << fmt::format(
      "| broadcast | b_0 + TASK bytes (N m) / bw_b | bw_b = {} handed to the socket, b_0 = {} ms "
      "| {} |\n",
      throughput(f.broadcast_per_byte, 1e9, "GB/s"), ms(f.broadcast_fixed),
      r2_cell(f.broadcast_r2));
  md << fmt::format("| round time{} | the sum | | {} |\n", bind ? ", the seed's model" : "",
                    r2_cell(f.round_r2[0]));
  if (bind)
    md << fmt::format("| round time, cores-aware | the sum | | {} |\n", r2_cell(f.round_r2[1]));
  md << "\n";
  for (const auto& n : f.notes) md << "Note: " << n << ".\n\n";

  md << "| N | B/N | rounds | measured median (ms) | " << (bind ? "seed model" : "predicted")
     << " (ms) | error |" << (bind ? " cores-aware (ms) | error |" : "")
     << "\n|---|---|---|---|---|---|" << (bind ? "---|---|" : "") << "\n";
  for (const auto& r : rows) {
    md << fmt::format("| {:.0f} | {:.0f} | {} | {} | {} | {} |", r.processes, r.process_samples,
                      r.rounds, ms(r.measured_round), ms(r.predicted_round[0]),
                      percent(r.error(0)));
    if (bind) md << fmt::format(" {} | {} |", ms(r.predicted_round[1]), percent(r.error(1)));
    md << "\n";
  }
  md << "\nThe parts, measured beside predicted (medians over each N's rounds, ms):\n\n"
     << "| N | compute | " << (bind ? "seed | cores-aware" : "predicted")
     << " | exchange | predicted | aggregation | predicted | broadcast | predicted |\n|---|---|---|"
     << (bind ? "---|" : "") << "---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    md << fmt::format("| {:.0f} | {} | {} |", r.processes, ms(r.measured.compute),
                      ms(r.predicted[0].compute));
    if (bind) md << fmt::format(" {} |", ms(r.predicted[1].compute));
    md << fmt::format(" {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} |\n", ms(r.measured.exchange),
                      ms(r.predicted[0].exchange), 1e3 * r.measured.aggregate,
                      1e3 * r.predicted[0].aggregate, 1e3 * r.measured.broadcast,
                      1e3 * r.predicted[0].broadcast);
  }
  md << "\n";

  // The verdicts, from the numbers.
  const char* names[2] = {bind ? "The seed's model" : "The model", "The cores-aware model"};
  for (int v = 0; v < shown; ++v) {
    std::vector<double> off;
    double worst = 0, worst_n = 0;
    for (const auto& r : rows) {
      if (std::abs(r.error(v)) > kTolerance) off.push_back(r.processes);
      if (std::abs(r.error(v)) >= std::abs(worst)) worst = r.error(v), worst_n = r.processes;
    }
    // the part that errs most, in ms, over all N
    const char* parts[4] = {"compute", "exchange", "aggregation", "broadcast"};
    double part_err = 0, part_n = 0;
    int part = 0;
    for (const auto& r : rows) {
      const double m[4] = {r.measured.compute, r.measured.exchange, r.measured.aggregate,
                           r.measured.broadcast};
      const double p[4] = {r.predicted[v].compute, r.predicted[v].exchange,
                           r.predicted[v].aggregate, r.predicted[v].broadcast};
      for (int k = 0; k < 4; ++k)
        if (std::abs(p[k] - m[k]) > std::abs(part_err))
          part_err = p[k] - m[k], part_n = r.processes, part = k;
    }
    md << fmt::format(
        "{} {} the measured median round time: {} (largest error {} at N = {:.0f}; R² {} over all "
        "rounds). Its largest miss is {} at N = {:.0f} ({:+.2f} ms).",
        names[v], off.empty() ? "explains" : "does not explain",
        off.empty()
            ? fmt::format("within {:.0f}% at every N", 100 * kTolerance)
            : fmt::format("off by more than {:.0f}% at N = {}", 100 * kTolerance, joined_n(off)),
        percent(worst), worst_n, r2_cell(f.round_r2[v]), parts[part], part_n, 1e3 * part_err);
    if (!(f.round_r2[v] >= 0.5))
      md << " With R² below 0.5 it accounts for the median rounds, not for the round-to-round "
            "scatter.";
    md << (v + 1 < shown ? " " : "\n\n");
  }
  for (int v = 0; v < shown; ++v)
    if (!(f.compute_per_sample[v] > 0))
      md << fmt::format(
          "Warning: the fitted c_s{} is not positive ({:.2f} µs per sample): the compute "
          "measured here does not fall with the batch at all, so the compute term is the constant "
          "c_0 and the verdict above says nothing about how compute scales with B/N.\n\n",
          v == 1 ? " (cores-aware)" : "", 1e6 * f.compute_per_sample[v]);
  // The cores: compute per sample per N says whether B/N holds.
  std::vector<double> beyond;
  for (double n : ns)
    if (n > cores) beyond.push_back(n);
  if (bind) {
    const DelayRow &first = rows.front(), &last = rows.back();
    const double us_first = 1e6 * first.measured.compute / first.process_samples,
                 us_last = 1e6 * last.measured.compute / last.process_samples;
    md << fmt::format(
        "Caveat: this machine has P = {} cores (hardware threads the suite saw), so at N = {} the "
        "client processes (and the server) time-slice them and a client's compute does not fall as "
        "B/N: measured compute per sample of its batch is {:.1f} µs at N = {:.0f} and {:.1f} µs at "
        "N = {:.0f} ({:.1f}x). The seed's B/N term {} (compute error at N = {:.0f}: {}). The "
        "cores-aware variant models compute as B / min(N, P), the global batch spread over the "
        "cores there are; it is a reading of this machine, not of the algorithm: with N <= P cores "
        "the two are the same model.\n\n",
        cores, joined_n(beyond), us_first, first.processes, us_last, last.processes,
        us_last / us_first,
        std::abs(last.predicted[0].compute / last.measured.compute - 1) > kTolerance
            ? "therefore misfits there"
            : "still fits within the tolerance there",
        last.processes, percent(last.predicted[0].compute / last.measured.compute - 1));
  } else {
    md << fmt::format(
        "Every run had at most P = {} processes for the {} cores the suite saw, so each client "
        "had a core of its own and the seed's B/N compute term is the one fitted.\n\n",
        cores, cores);
  }

  if (load_average >= 0)
    md << fmt::format(
        "The machine's 1-minute load average when the runs ended was {:.1f} on its {} cores{}.\n\n",
        load_average, cores,
        load_average > cores
            ? ": other work shared the cores with the runs, so every time above is inflated by "
              "it and the rounds are noisier than the model's terms"
            : "");
  if (!dir.empty()) {
    LinePlot p{"delay model: round time per N, predicted and measured\n" + title,
               "processes N (one client each)",
               "round time (ms, median over rounds)",
               true,
               false,
               {}};
    Series meas{"measured", {}, {}, {}, {}},
        seed{bind ? "seed model (B/N)" : "predicted", {}, {}, {}, {}},
        aware{"cores-aware model (B / min(N, P))", {}, {}, {}, {}};
    for (const auto& r : rows) {
      meas.x.push_back(r.processes), meas.y.push_back(1e3 * r.measured_round);
      seed.x.push_back(r.processes), seed.y.push_back(1e3 * r.predicted_round[0]);
      aware.x.push_back(r.processes), aware.y.push_back(1e3 * r.predicted_round[1]);
    }
    p.series = {meas, seed};
    if (bind) p.series.push_back(aware);
    std::string why;
    if (draw_line_plot(dir / "plots" / "delay-model.svg", p, &why))
      md << fmt::format(
          "![{}: delay model, predicted and measured round time](plots/delay-model.svg)\n\n",
          title);
    else
      md << fmt::format("(plot delay-model.svg not drawn: {})\n\n", why);
  }
  return md.str();
}

nlohmann::json delay_model_json(const std::vector<DelayRound>& rounds, int cores) {
  const DelayFit f = fit_delay_model(rounds, cores);
  nlohmann::json j = {{"cores", cores}, {"rounds", f.rounds}, {"fitted", f.ok()}};
  if (!f.ok()) {
    j["not_identified"] = f.why;
    return j;
  }
  j["seconds_per_sample"] = {f.compute_per_sample[0], f.compute_per_sample[1]};
  j["compute_fixed_seconds"] = {f.compute_fixed[0], f.compute_fixed[1]};
  j["compute_r2"] = {f.compute_r2[0], f.compute_r2[1]};
  j["exchange"] = {{"fixed_seconds", f.exchange_fixed},
                   {"seconds_per_byte_up", f.exchange_per_byte_up},
                   {"seconds_per_byte_down", f.exchange_per_byte_down},
                   {"separate_links", f.separate_links},
                   {"r2", f.exchange_r2}};
  j["aggregation"] = {{"fixed_seconds", f.aggregate_fixed},
                      {"seconds_per_byte", f.aggregate_per_byte},
                      {"r2", f.aggregate_r2}};
  j["broadcast"] = {{"fixed_seconds", f.broadcast_fixed},
                    {"seconds_per_byte", f.broadcast_per_byte},
                    {"r2", f.broadcast_r2}};
  j["round_r2"] = {f.round_r2[0], f.round_r2[1]};
  j["cores_aware_fitted"] = f.cores_aware;
  j["variants"] = {"seed: compute = c_0 + c_s B/N", "cores-aware: compute = c_0 + c_s B/min(N, P)"};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : delay_rows(f, rounds))
    rows.push_back({{"processes", r.processes},
                    {"samples_per_process", r.process_samples},
                    {"rounds", r.rounds},
                    {"measured_seconds", r.measured_round},
                    {"predicted_seconds", {r.predicted_round[0], r.predicted_round[1]}},
                    {"relative_error", {r.error(0), r.error(1)}}});
  j["per_n"] = rows;
  return j;
}

}  // namespace fedpar
