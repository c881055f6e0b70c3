// `fedpar compare RESULTS... [--metric M] [--x X] [--target T] [--out DIR]`.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "core/check.h"
#include "experiments/cli/commands.h"
#include "experiments/compare.h"

namespace fedpar {

Action add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "plot and tabulate finished runs side by side (their results folders)");
  auto o = std::make_shared<CompareOptions>();
  auto command = std::make_shared<std::string>("fedpar compare");
  cmd->add_option("results", o->runs,
                  "results folders of fedpar run or server (a run of a name already taken got "
                  "the folder NAME-2, NAME-3, ...), or a suite's folder: all its runs")
      ->required();
  cmd->add_option("--metric", o->metric,
                  "accuracy (test, %), loss (test), train-loss (the model on the training set: "
                  "runs with eval_train = true) or client-worst10 (the mean accuracy of the worst "
                  "10% of clients, each scored on its own samples: runs with eval_clients = true)")
      ->check(CLI::IsMember({"accuracy", "loss", "train-loss", "client-worst10"}))
      ->capture_default_str();
  cmd->add_option("--x", o->x,
                  "round, samples, bytes (at the server and between workers), bytes-up (received "
                  "at the server), bytes-down (sent by it), device-bytes (each asked client "
                  "downloading the model itself: not tied to the process count) or seconds")
      ->check(CLI::IsMember(
          {"round", "samples", "bytes", "bytes-up", "bytes-down", "device-bytes", "seconds"}))
      ->capture_default_str();
  cmd->add_option("--target", o->target,
                  "when each run first reached it (accuracy in %, or a loss)");
  cmd->add_option("--out", o->out, "the report's folder (-2, -3, ... added when it exists)")
      ->capture_default_str();
  return [o, command, cmd] {
    while (o->out.filename().empty() && o->out.parent_path() != o->out)  // "cmp/" names cmp
      o->out = o->out.parent_path();
    if (percent_metric(o->metric) && o->target > 0 &&
        o->target <= 1)  // a fraction, as stop_at_accuracy
      throw Error(fmt::format("--target {0} is a percent for {2}: --target {1:g} for {1:g}%",
                              o->target, 100 * o->target, o->metric));
    if (percent_metric(o->metric) && o->target > 100)
      throw Error(fmt::format("--target {} is above 100%: no run can reach it", o->target));
    if (std::filesystem::exists(o->out / "metrics.jsonl") ||
        std::filesystem::exists(o->out / "summary.json"))  // its report would read as a rerun
      throw Error(
          fmt::format("--out {} is a run's results folder: give the report a folder of its own",
                      o->out.string()));
    for (const auto& r : o->runs) *command += " " + r.string();
    for (const char* flag : {"--metric", "--x", "--target", "--out"})
      if (cmd->count(flag))
        *command += fmt::format(" {} {}", flag, cmd->get_option(flag)->as<std::string>());
    return run_compare(*o, *command);
  };
}

}  // namespace fedpar
