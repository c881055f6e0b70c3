// The plots a run's own folder gets when it ends: its test accuracy and test loss by round, drawn
// into RUN/plots/ for its README, so a single run is looked at before it is compared
// (`fedpar compare` puts several side by side).
#pragma once

#include <filesystem>
#include <string>

namespace fedpar {

// Fewer evaluated rounds than this draw no plot: a few points read better in the README's text.
inline constexpr size_t kRunPlotMinPoints = 5;

// The --no-plots of `fedpar run`, `server` and `launch`.
static_assert(kRunPlotMinPoints == 5, "kNoPlotsHelp says 5");
inline constexpr const char* kNoPlotsHelp =
    "draw no plots into the run's folder (by default, with gnuplot installed, RESULTS_DIR/NAME/"
    "plots/ gets the test accuracy and loss by round, with eval_train the global train loss, "
    "with eval_clients the clients' accuracy, and in the async regime the updates' staleness, "
    "once 5 rounds were evaluated)";

// Draws the plots of the run `name` into `run_dir` (its folder, still under its partial name, with
// its metrics.jsonl) and returns the README's markdown that shows them, or that says why there
// are none (gnuplot missing, or fewer than kRunPlotMinPoints evaluated rounds).
std::string draw_run_plots(const std::filesystem::path& run_dir, const std::string& name);

}  // namespace fedpar
