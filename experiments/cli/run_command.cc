// `fedpar run CONFIG`: one server and P client processes on this machine, supervised (see
// experiments/local_run.h); a config with an [equivalence] table runs the equivalence experiment.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "core/run_spec.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/data_flags.h"
#include "experiments/equivalence.h"
#include "experiments/local_run.h"
#include "experiments/run_plots.h"

namespace fedpar {

Action add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run",
                                 "run a config with a server and its client processes on this "
                                 "machine, supervised");
  struct Args {
    std::string config;
    std::vector<std::string> sets, flag_sets;
    int processes = 0;  // 0 = the config's value
    bool no_plots = false;
    LocalRunOptions opts;
  };
  cmd->footer(
      fmt::format("Exit code: 0 when the run completed; 2 for a bad config; 5 when the run failed "
                  "once started (a process\nmissing at a deadline or dead, a failed ring, a "
                  "vanished server); 4 when the training diverged;\n128 + the signal when "
                  "stopped (130: Ctrl-C).\n"
                  "A config with an [equivalence] table exits {} when a claim failed: (b), (c) "
                  "over {:g}x as far from exact\n(float64) arithmetic as centralized float32, or\n"
                  "(d), (e) fewer than {:g} orders of magnitude further from (a) than (b), (c); "
                  "stderr names the model and\n"
                  "the row, and results/<name>/ is still written (its report.md lists the failed "
                  "claims at the top).",
                  kClaimFailedExit, kFloorBound, kOrdersBound));
  auto a = std::make_shared<Args>();
  add_run_config_args(cmd, a->config, a->sets, a->flag_sets);
  cmd->add_option("--processes,-p", a->processes, "client processes (default: the config's)");
  cmd->add_option("--bind", a->opts.bind,
                  "server endpoint (default: the config's bind where it sets one other than "
                  "fedpar server's tcp://127.0.0.1:5555, else tcp://127.0.0.1:* , a free port)");
  cmd->add_option("--resume", a->opts.resume,
                  "continue the run whose folder holds checkpoint.bin (checkpoint_every = R); "
                  "the same config")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--no-plots", a->no_plots, kNoPlotsHelp);
  return [a] {
    a->opts.plots = !a->no_plots;
    const bool equivalence = is_equivalence_config(a->config);
    Config cfg = equivalence ? make_equivalence_config() : make_run_config();
    cfg.merge_file(a->config);
    const std::vector<std::string> sets = flags_then_sets(a->flag_sets, a->sets);
    cfg.set_all(sets);
    if (a->processes > 0) cfg.set("processes", std::to_string(a->processes));
    if (!equivalence) return run_locally(std::move(cfg), a->opts);
    refuse_overridden_sets(cfg, sets);
    std::string command = "fedpar run " + a->config;
    for (const auto& s : sets) command += " --set " + s;
    if (a->processes > 0) command += fmt::format(" -p {}", a->processes);
    LocalRunOptions quiet = a->opts;
    quiet.quiet = true;
    quiet.plots = false;  // the experiment's report has its plots
    return equivalence_exit_code(run_equivalence(cfg, quiet, command));
  };
}

}  // namespace fedpar
