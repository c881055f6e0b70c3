// draw_run_plots; see run_plots.h.
#include "experiments/run_plots.h"

#include <fmt/format.h>

#include "experiments/plot.h"
#include "experiments/run_metrics.h"

namespace fedpar {

std::string draw_run_plots(const std::filesystem::path& run_dir, const std::string& name) {
  const RunCurves c = read_curves(run_dir);
  if (c.round.size() < kRunPlotMinPoints)
    return fmt::format(
        "(no plots: {} evaluated round(s), and a run's own curves start at {}; `eval_every` sets "
        "which rounds are evaluated)\n\n",
        c.round.size(), kRunPlotMinPoints);
  std::filesystem::create_directories(run_dir / "plots");
  struct Drawn {
    const char* file;
    const char* name;
    const std::vector<double>& y;
    bool log_y = false;
  };
  std::string md;
  std::vector<Drawn> drawn = {Drawn{"accuracy-vs-round.svg", "test accuracy (%)", c.accuracy},
                              Drawn{"loss-vs-round.svg", "test loss", c.test_loss}};
  if (c.global_train_loss.size() == c.round.size())  // eval_train
    drawn.push_back({"train-loss-vs-round.svg", "global train loss", c.global_train_loss, true});
  for (const Drawn& d : drawn) {
    const LinePlot plot{.title = fmt::format("{} by round: {}", d.name, name),
                        .xlabel = "round",
                        .ylabel = d.name,
                        .log_y = d.log_y,
                        .series = {{name, c.round, d.y, {}, {}}}};
    std::string why;  // the data and script stay: gnuplot, once installed, draws them there
    md +=
        draw_line_plot(run_dir / "plots" / d.file, plot, &why)
            ? fmt::format("![{} by round](plots/{})\n\n", d.name, d.file)
            : fmt::format("(no plot of the {}: {}; then `cd plots && gnuplot {}.gp` draws it)\n\n",
                          d.name, why, d.file);
  }
  return md;
}

}  // namespace fedpar
