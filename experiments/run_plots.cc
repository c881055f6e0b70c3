// draw_run_plots; see run_plots.h.
#include "experiments/run_plots.h"

#include <fmt/format.h>

#include <algorithm>

#include "experiments/plot.h"
#include "experiments/run_metrics.h"

namespace fedpar {

std::string draw_run_plots(const std::filesystem::path& run_dir, const std::string& name) {
  const RunCurves c = read_curves(run_dir);
  struct Drawn {
    const char* file;
    const char* name;
    const std::vector<double>& x;
    const std::vector<double>& y;
    bool log_y = false;
  };
  std::vector<Drawn> drawn;
  if (c.round.size() >= kRunPlotMinPoints) {
    drawn.push_back({"accuracy-vs-round.svg", "test accuracy (%)", c.round, c.accuracy});
    drawn.push_back({"loss-vs-round.svg", "test loss", c.round, c.test_loss});
  }
  // eval_train, with or without a test set
  if (c.train_round.size() >= kRunPlotMinPoints)
    drawn.push_back(
        {"train-loss-vs-round.svg", "global train loss", c.train_round, c.global_train_loss, true});
  const bool clients = c.client_round.size() >= kRunPlotMinPoints;       // eval_clients
  const bool staleness = c.staleness_round.size() >= kRunPlotMinPoints;  // async
  // too few evaluations for the curves of the model's scores (an async run's staleness, every
  // round's, may still be drawn)
  const std::string too_few = fmt::format(
      "(no {}plots: {} evaluated round(s), and a run's own curves start at {}; `eval_every` sets "
      "which rounds are evaluated; without a test set, only eval_train or eval_clients = true "
      "evaluates)\n\n",
      staleness ? "accuracy or loss " : "",
      std::max({c.round.size(), c.train_round.size(), c.client_round.size()}), kRunPlotMinPoints);
  if (drawn.empty() && !clients && !staleness) return too_few;
  std::filesystem::create_directories(run_dir / "plots");
  std::string md = drawn.empty() && !clients ? too_few : "";
  const auto draw = [&](const char* file, const std::string& what, const LinePlot& plot) {
    md += readme_plot(run_dir, file, what, "round", plot);
  };
  for (const Drawn& d : drawn)
    draw(d.file, d.name,
         {.title = fmt::format("{} by round: {}", d.name, name),
          .xlabel = "round",
          .ylabel = d.name,
          .log_y = d.log_y,
          .series = {{name, d.x, d.y, {}, {}}}});
  if (clients)
    draw("client-accuracy-vs-round.svg", "clients' accuracy on their own samples",
         {.title = fmt::format("clients' accuracy on their own samples by round: {}\n(the band: "
                               "lowest to highest client)",
                               name),
          .xlabel = "round",
          .ylabel = "accuracy (%)",
          .series = {
              {"mean over clients", c.client_round, c.client_mean, c.client_min, c.client_max},
              {"worst 10% of clients (their mean)", c.client_round, c.client_worst10, {}, {}}}});
  if (staleness)
    draw("staleness-vs-round.svg", "staleness of the applied updates",
         {.title = fmt::format("staleness of the applied updates by round: {}\n(model versions "
                               "applied between an update's model and its arrival)",
                               name),
          .xlabel = "round",
          .ylabel = "staleness (versions)",
          .series = {{"mean", c.staleness_round, c.staleness_mean, {}, {}},
                     {"max", c.staleness_round, c.staleness_max, {}, {}}}});
  return md;
}

}  // namespace fedpar
