// Subcommands of the `fedpar` executable. Each registers its flags on a CLI11 app and returns the
// action to run after parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace fedpar {

using Action = std::function<int()>;
// Runs `command`'s action; a failure is printed on one line and becomes the exit code: Error 2,
// Interrupted 128 + its signal, anything else 1 (main.cc).
int run_action(const std::string& command, const Action& action);

Action add_train_command(CLI::App& app);
Action add_models_command(CLI::App& app);
Action add_partition_command(CLI::App& app);
Action add_server_command(CLI::App& app);
Action add_client_command(CLI::App& app);
Action add_replay_command(CLI::App& app);
Action add_keygen_command(CLI::App& app);
Action add_run_command(CLI::App& app);
Action add_suite_command(CLI::App& app);
Action add_keys_command(CLI::App& app);
Action add_compare_command(CLI::App& app);
Action add_launch_command(CLI::App& app);
Action add_privacy_command(CLI::App& app);

}  // namespace fedpar
