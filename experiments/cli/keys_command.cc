// `fedpar keys CONFIG`: every key a config may set, with its default and what it means (the
// compiled-in defaults, comments included), for `fedpar train`, `run`, the equivalence
// experiment and suite files; an unknown key's error points here.
#include <fmt/format.h>

#include <map>
#include <memory>

#include "core/run_spec.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/train_config.h"
#include "experiments/equivalence.h"
#include "experiments/suite.h"

namespace fedpar {

Action add_keys_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "keys", "list every config key with its default and meaning (for --set and TOML files)");
  auto which = std::make_shared<std::string>("run");
  cmd->add_option("config", *which,
                  "train (fedpar train), run (fedpar run, server), equivalence (a config with "
                  "[equivalence]) or suite (a suite file)")
      ->check(CLI::IsMember({"train", "run", "equivalence", "suite"}))
      ->capture_default_str();
  return [which] {
    const std::map<std::string, std::string> text = {
        {"train", train_defaults()},
        {"run", run_defaults()},
        {"equivalence", run_defaults() + equivalence_section()},
        {"suite", run_defaults() + suite_section() +
                      "\n# A suite with an [equivalence] table also takes "
                      "`fedpar keys equivalence`'s.\n"}};
    fmt::print("{}", text.at(*which));
    return 0;
  };
}

}  // namespace fedpar
