// draw_train_plots; see train_plots.h.
#include "experiments/train_plots.h"

#include <fmt/format.h>

#include "experiments/plot.h"
#include "experiments/run_plots.h"

namespace fedpar {

std::string draw_train_plots(const std::filesystem::path& run_dir, const std::string& name,
                             const TrainCurves& c) {
  static_assert(kRunPlotMinPoints == 5, "kNoTrainPlotsHelp says 5");
  if (c.epoch.size() < kRunPlotMinPoints)
    return fmt::format(
        "(no plots: {} training record(s), and the curves start at {}; `train.log_every` sets "
        "how many steps each record averages)\n\n",
        c.epoch.size(), kRunPlotMinPoints);
  std::filesystem::create_directories(run_dir / "plots");
  std::string md;
  const auto draw = [&](const char* file, const char* what, const char* ylabel, bool log_y,
                        const std::vector<double>& train, const std::vector<double>& test) {
    LinePlot plot{.title = fmt::format("{} by epoch: {}\n(training: the mean over the steps since "
                                       "the previous point; test: each epoch's end)",
                                       what, name),
                  .xlabel = "epoch (samples seen / training set size)",
                  .ylabel = ylabel,
                  .log_y = log_y,
                  .series = {{"training", c.epoch, train, {}, {}}}};
    if (!c.test_epoch.empty())
      plot.series.push_back({"test", c.test_epoch, test, {}, {}, /*points_only=*/true});
    md += readme_plot(run_dir, file, what, "epoch", plot);
  };
  draw("loss-vs-epoch.svg", "loss", "loss", true, c.loss, c.test_loss);
  draw("accuracy-vs-epoch.svg", "accuracy", "accuracy (%)", false, c.accuracy, c.test_accuracy);
  return md;
}

}  // namespace fedpar
