// `fedpar server` and `fedpar client`: the two processes of a distributed run.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "clients/client.h"
#include "core/check.h"
#include "core/run_spec.h"
#include "core/stop_signal.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/data_flags.h"
#include "experiments/local_run.h"
#include "experiments/run_plots.h"
#include "server/async_replay.h"
#include "server/server.h"
#include "transport/curve.h"

namespace fedpar {

Action add_server_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("server",
                                 "run the rounds of a federated (model) or data-parallel "
                                 "(gradient) run for connected client processes");
  struct Args {
    std::string config;
    std::vector<std::string> sets, flag_sets;
    ServerOptions opts;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--config", a->config, "TOML run config (see experiments/)")
      ->check(existing_config_file());
  cmd->add_option("--set", a->sets, "override a config key: --set rounds=5");
  add_flag_keys(cmd, data_flags(), a->flag_sets);
  cmd->add_option("--endpoint-file", a->opts.endpoint_file,
                  "write the bound endpoint here (useful with tcp://127.0.0.1:*)");
  cmd->add_flag("--quiet", a->opts.quiet, "no progress on stderr");
  cmd->add_option("--also-allow", a->opts.also_allow,
                  "with [security]: a folder of further client .pub files to let in, kept out of "
                  "the run's config (fedpar run passes its own client processes' keys)")
      ->check(CLI::ExistingDirectory);
  auto keep = std::make_shared<bool>(false);
  cmd->add_flag("--no-incomplete", *keep,
                "a run that fails or is stopped keeps nothing (not even its rounds as "
                "NAME.incomplete): for experiments made of runs, whose own folder goes then");
  cmd->add_option("--resume", a->opts.resume,
                  "continue the run whose folder holds checkpoint.bin; the same config (without "
                  "--config: the folder's config.resolved.toml)")
      ->check(CLI::ExistingDirectory);
  auto no_plots = std::make_shared<bool>(false);
  cmd->add_flag("--no-plots", *no_plots, kNoPlotsHelp);
  return [a, no_plots, keep] {
    if (!*no_plots) a->opts.draw_plots = draw_run_plots;
    a->opts.keep_incomplete = !*keep;
    a->opts.under_fedpar_run = std::getenv(kSupervisorPidVariable) != nullptr;
    if (const char* f = std::getenv(kStopReasonVariable)) a->opts.stop_reason_file = f;
    Config cfg = make_run_config();
    // a run resumed by hand continues with the config it was made with
    const auto saved = std::filesystem::path(a->opts.resume) / "config.resolved.toml";
    if (a->config.empty() && !a->opts.resume.empty() && std::filesystem::exists(saved))
      a->config = saved.string();
    if (!a->config.empty()) cfg.merge_file(a->config);
    cfg.set_all(flags_then_sets(a->flag_sets, a->sets));
    return run_server(std::move(cfg), a->opts);
  };
}

Action add_client_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("client", "host virtual clients for a fedpar server");
  cmd->footer(fmt::format(
      "Exit code: 0 when the run completed; {} when the server ended it otherwise (stopped, "
      "failed, or went on\nwithout this process: the server's reason is printed); {} when this "
      "process could not go on (a silent\nor vanished server, a failed ring, CURVE handshakes the "
      "server's keys refuse); 2 for a bad flag,\na refusal the server sends (ERROR), or a message "
      "from it that this fedpar cannot use.",
      kExitEndedByServer, kExitRunFailed));
  auto o = std::make_shared<ClientOptions>();
  cmd->add_option("--server", o->server, "tcp://HOST:PORT or ipc://PATH")->required();
  cmd->add_option("--slots", o->slots,
                  "this process's share of the virtual clients: they are dealt in proportion to "
                  "the processes' slots (at most the run's max_slots)")
      ->capture_default_str();
  cmd->add_option("--wait", o->wait_seconds, "seconds the server may stay silent")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "cpu or cuda (default: the run config's device)");
  cmd->add_option("--data-dir", o->data_dir,
                  "folder holding mnist/ on this machine (default: the run's data.dir, else "
                  "$FEDPAR_DATA_DIR, ./data when it holds mnist/, the source tree's data/)");
  cmd->add_flag("--quiet", o->quiet, "no progress on stderr");
  cmd->add_option("--max-frame-mib", o->max_frame_mib,
                  "the largest frame taken from the server (a bigger one drops the connection)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--key", o->key_file, "CURVE: this client's key pair (fedpar keygen NAME)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--server-key", o->server_key_file, "CURVE: the server's public key (.pub)")
      ->check(CLI::ExistingFile);
  return [o] {
    if (!o->quiet) install_last_words(fmt::format("client {}", ::getpid()));
    return run_client(*o);
  };
}

Action add_keygen_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("keygen",
                                 "make a CURVE key pair: NAME.key (secret, for the server's "
                                 "security.key or a client's --key) and NAME.pub (for the "
                                 "other side: the server's security.clients folder, or the "
                                 "clients' --server-key)");
  auto name = std::make_shared<std::string>();
  auto dir = std::make_shared<std::string>("keys");
  cmd->add_option("name", *name, "the key's name: server, client-1, ...")->required();
  cmd->add_option("--dir", *dir, "where to write the two files")->capture_default_str();
  return [name, dir] {
    const auto key = write_curve_key_pair(*dir, *name, generate_curve_key_pair());
    fmt::print("{} (secret: keep it on this machine)\n{}\n", key.string(),
               (std::filesystem::path(*dir) / (*name + ".pub")).string());
    return 0;
  };
}

Action add_replay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("replay",
                                 "recompute an async run from its updates.jsonl and check that "
                                 "the final model hash matches");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("results", *dir, "the run's results folder (results/<name>)")
      ->required()
      ->check(CLI::ExistingDirectory);
  return [dir] {
    const ReplayResult r = replay_async_run(*dir);
    fmt::print("replayed {} updates ({} applied): final model hash {} {} the run's {}\n", r.updates,
               r.applied, r.hash, r.hash == r.run_hash ? "matches" : "DIFFERS FROM", r.run_hash);
    if (!r.complete())
      fmt::print(
          "updates.jsonl has {} applied updates where the run's rounds applied {}: the log "
          "is {}\n",
          r.applied, r.run_applied, r.applied < r.run_applied ? "short" : "too long");
    return r.matches() ? 0 : 1;
  };
}

}  // namespace fedpar
