// `fedpar suite NAME [--smoke] [--out DIR]`: runs an experiment suite and writes its report.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/cli/data_flags.h"
#include "experiments/suite.h"

namespace fedpar {

Action add_suite_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "suite", fmt::format("run an experiment suite and write its report (suites: {})",
                           fmt::join(suite_names(), ", ")));
  auto o = std::make_shared<SuiteOptions>();
  cmd->add_option("name", o->name, "suite name (experiments/suites/NAME.toml) or a suite file")
      ->required();
  cmd->add_flag("--smoke", o->smoke, "the small size (minutes on 2 cores; what the tests run)");
  cmd->add_option("--out", o->out, "report folder (default results/NAME[-smoke])");
  cmd->add_option("--set", o->sets, "override a run config key for every run: --set rounds=5");
  auto flag_sets = std::make_shared<std::vector<std::string>>();
  add_flag_keys(cmd, data_flags(), *flag_sets);
  return [o, flag_sets] {
    o->sets = flags_then_sets(*flag_sets, o->sets);
    return run_suite(*o);
  };
}

}  // namespace fedpar
