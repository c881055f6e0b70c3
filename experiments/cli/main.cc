// The `fedpar` executable: one binary, one subcommand per job. Errors from user input are
// printed on one line with exit code 2, a run that failed once started (RunFailed) with 5; a stop
// signal (SIGINT, SIGTERM, SIGHUP) exits 128 + it; nothing else is left behind.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <map>

#include "core/allocator.h"
#include "core/check.h"
#include "core/stop_signal.h"
#include "experiments/cli/commands.h"
#include "experiments/local_run.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"fedpar: federated learning and data-parallel training, side by side"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fedpar 0.1.0");
  std::map<std::string, fedpar::Action> actions;
  actions["train"] = fedpar::add_train_command(app);
  actions["models"] = fedpar::add_models_command(app);
  actions["partition"] = fedpar::add_partition_command(app);
  actions["server"] = fedpar::add_server_command(app);
  actions["client"] = fedpar::add_client_command(app);
  actions["run"] = fedpar::add_run_command(app);
  actions["replay"] = fedpar::add_replay_command(app);
  actions["keygen"] = fedpar::add_keygen_command(app);
  actions["suite"] = fedpar::add_suite_command(app);
  actions["keys"] = fedpar::add_keys_command(app);
  actions["compare"] = fedpar::add_compare_command(app);
  actions["launch"] = fedpar::add_launch_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    fmt::print(stderr, "fedpar: error: {} (see fedpar {}--help)\n", e.what(),
               app.get_subcommands().empty() ? "" : app.get_subcommands()[0]->get_name() + " ");
    return 2;
  }
  const std::string command = app.get_subcommands()[0]->get_name();
  return fedpar::run_action(command, actions.at(command));
}

}  // namespace

namespace fedpar {

int run_action(const std::string& command, const Action& action) {
  try {
    return action();
  } catch (const Interrupted& e) {  // the partial results folder is removed, or kept for --resume
    fmt::print(stderr, "fedpar {}: {}; {}\n", command, e.what(),
               e.kept() ? "its checkpoint is kept (above)" : "nothing was kept");
    return 128 + e.signal();
  } catch (const RunFailed& e) {
    fmt::print(stderr, "fedpar: error: {}\n", e.what());
    return kExitRunFailed;
  } catch (const Error& e) {
    fmt::print(stderr, "fedpar: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "fedpar: internal error: {}\n", e.what());
    return 1;
  }
}

}  // namespace fedpar

int main(int argc, char** argv) {
  fedpar::follow_supervisor();  // a child of `fedpar run` dies with it
  fedpar::keep_freed_memory();
  try {
    return run(argc, argv);
  } catch (...) {  // e.g. std::bad_alloc while setting up the command line
    std::fputs("fedpar: internal error during start-up\n", stderr);
    return 1;
  }
}
