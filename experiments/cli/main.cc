// The `fedpar` executable: one binary, one subcommand per job. Errors from user input are
// printed on one line with exit code 2, a run that failed once started (RunFailed) with 5; a stop
// signal (SIGINT, SIGTERM, SIGHUP) exits 128 + it; nothing else is left behind.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>

#include "core/allocator.h"
#include "core/build_info.h"
#include "core/check.h"
#include "core/run_spec.h"
#include "core/spelling.h"
#include "core/stop_signal.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/train_config.h"
#include "experiments/local_run.h"

namespace fedpar {
extern const char kBuildSourceCommit[];  // generated: cmake/source_commit.cmake
}

namespace {

// The config keys an option's name may mean: the key itself or keys whose last part it is
// (`lr` -> optimizer.lr), '-' read as '_' or '.'; those of `fedpar train`'s config for train, else
// the run config's.
std::vector<std::string> keys_named(const CLI::App& command, const std::string& name) {
  std::string underscored = name, dotted = name;  // local-steps: local_steps or local.steps
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  std::replace(dotted.begin(), dotted.end(), '-', '.');
  const fedpar::Config config =
      command.get_name() == "train" ? fedpar::make_train_config() : fedpar::make_run_config();
  std::vector<std::string> out;
  for (const std::string& key : config.keys())
    for (const std::string& n : {underscored, dotted})
      if (key == n || key.ends_with("." + n)) {
        out.push_back(key);
        break;
      }
  // the key itself first (`--bind`: bind, not allreduce.bind)
  std::stable_partition(out.begin(), out.end(),
                        [&](const std::string& k) { return k == underscored || k == dotted; });
  return out;
}

// The first option on the line that the command does not have, with a hint: a flag it has that
// the word begins or ends (`--epoch` for --epochs), else the config key it names written with
// --set (`run --rounds 2`: --set rounds=2).
std::string unknown_option_hint(const CLI::App* command, int argc, char** argv) {
  if (command == nullptr) return "";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2 || word[2] == '=') continue;
    const size_t eq = word.find('=');
    const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
    if (command->get_option_no_throw("--" + name) != nullptr) continue;
    for (const CLI::Option* o : command->get_options())
      for (const std::string& flag : o->get_lnames())
        if (flag.rfind(name, 0) == 0 || name.rfind(flag, 0) == 0)
          return fmt::format("; did you mean --{}?", flag);
    if (command->get_option_no_throw("--set") == nullptr) return "";
    const std::vector<std::string> keys = keys_named(*command, name);
    if (keys.empty()) return "";
    std::string value = "VALUE";
    if (eq != std::string::npos)
      value = word.substr(eq + 1);
    else if (i + 1 < argc && argv[i + 1][0] != '-')
      value = argv[i + 1];
    return fmt::format("; config keys are set with --set: --set {}={}{}", keys[0], value,
                       keys.size() > 1
                           ? fmt::format(" (or {})", fmt::join(keys.begin() + 1, keys.end(), ", "))
                           : "");
  }
  return "";
}

int run(int argc, char** argv) {
  fedpar::set_source_commit(fedpar::kBuildSourceCommit);  // for results folders' provenance
  CLI::App app{"fedpar: federated learning and data-parallel training, side by side"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       fmt::format("fedpar 0.1.0 (commit {}; {}; {})", fedpar::source_commit(),
                                   fedpar::build_vector_units(), fedpar::blas_kernels()));
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
  actions["privacy"] = fedpar::add_privacy_command(app);
  // The first word names the command: CLI11 would skip an unknown one and complain about the
  // next. `fedpar help [COMMAND]` is --help.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.resize(std::min<size_t>(args.size(), 1));
    args.push_back("--help");
  }
  if (args.empty() || (!args[0].starts_with("-") && !actions.count(args[0]))) {
    std::vector<std::string> names;
    for (const auto& [name, action] : actions) names.push_back(name);
    fmt::print(stderr, "fedpar: error: {} (commands: {}; fedpar --help says what each does)\n",
               args.empty() ? "which command?"
                            : fmt::format("no command '{}'{}", args[0],
                                          fedpar::did_you_mean(args[0], names)),
               fmt::join(names, ", "));
    return 2;
  }
  app.name(argv[0]);  // what parse(argc, argv) would take for the usage lines
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const CLI::App* command = app.get_subcommands().empty() ? nullptr : app.get_subcommands()[0];
    const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
    // CLI11 lists the unexpected arguments last first ("3 --rounds"); say them as they were typed
    const std::string what = extras ? fmt::format("The following arguments were not expected: {}",
                                                  fmt::join(app.remaining(true), " "))
                                    : e.what();
    fmt::print(stderr, "fedpar: error: {}{} (see fedpar {}--help)\n", what,
               extras ? unknown_option_hint(command, argc, argv) : "",
               command == nullptr ? "" : command->get_name() + " ");
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
  } catch (const Interrupted& e) {  // the partial results folder is removed, or kept as incomplete
    // the server's process owns the run's folder: it keeps the rounds that ended
    fmt::print(stderr, "fedpar {}: {}; {}\n", command, e.what(),
               e.kept()              ? "its rounds are kept (above)"
               : command == "server" ? "nothing was kept (no round had ended)"
               : command == "launch" ? "the server's rank says what it kept"
                                     : "nothing was kept");
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
