// The plots `fedpar train` draws into its folder: the training loss and accuracy as it went, with
// the test set's at each epoch's end, so a centralized baseline is looked at as a run is.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fedpar {

// What metrics.jsonl records, by epoch (fractional: samples seen / training set size).
struct TrainCurves {
  // each `train` record: the mean over the steps since the previous one
  std::vector<double> epoch, loss, accuracy;  // accuracy in percent
  // each epoch's end, with a test set (else empty)
  std::vector<double> test_epoch, test_loss, test_accuracy;
};

// The --no-plots of `fedpar train`.
inline constexpr const char* kNoTrainPlotsHelp =
    "draw no plots into the run's folder (by default, with gnuplot installed, RESULTS_DIR/NAME/"
    "plots/ gets the training and test loss and accuracy by epoch, once train.log_every has "
    "recorded 5 points)";

// Draws loss-vs-epoch.svg and accuracy-vs-epoch.svg into run_dir/plots and returns the README's
// markdown that shows them, or that says why there are none (gnuplot missing, too few points).
std::string draw_train_plots(const std::filesystem::path& run_dir, const std::string& name,
                             const TrainCurves& c);

}  // namespace fedpar
