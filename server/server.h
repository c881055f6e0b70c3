// The fedpar server: binds its endpoint, waits for the client processes, gives them their virtual
// clients and shards, runs the rounds of its plan (plan.h) on the round engine, evaluates, and
// writes results/<run>/. Peers' input is validated and answered, never trusted.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <zmq.hpp>

#include "core/config.h"

namespace fedpar {

struct ServerOptions {
  std::string endpoint_file;  // where to write the bound endpoint (tcp port * resolved)
  bool quiet = false;
  zmq::context_t* context = nullptr;  // shared with client threads for inproc:// (tests)
  std::string resume;                 // a run folder with checkpoint.bin: continue that run
  // A folder of further client .pub files to let in beside security.clients' (fedpar run's own
  // client processes, keyed for the one run): not part of the run's config, which keeps the
  // user's folder for a rerun.
  std::string also_allow;
  // A run that fails or is stopped after a round keeps it as NAME.incomplete (else: nothing).
  bool keep_incomplete = true;
  // Started by `fedpar run` (which starts the clients too): the command that resumes a kept run
  // is fedpar run's, else fedpar server's (its clients started as before).
  bool under_fedpar_run = false;
  // Where `fedpar run` writes why it stopped this server (a client process died), "" when not
  // under it: the kept folder's README gives that reason, not the signal it was stopped with.
  std::string stop_reason_file;
  // Started by `fedpar launch`, which has no [security]: the plaintext warning says what does.
  bool under_launch = false;
  // ... and the run_config_hash of its ranks' config: a HELLO naming another is refused (a rank
  // of another job on the same port, or one started with other flags)
  std::string launch_config;
  // Draws the finished run's plots into its folder (the folder, the run's name) and returns the
  // README's markdown showing them; unset: none (the fedpar command sets it: plotting lives above
  // the server).
  std::function<std::string(const std::filesystem::path&, const std::string&)> draw_plots;
};

// Returns the exit code; throws Error for problems found before or during the run.
int run_server(Config cfg, const ServerOptions& opts);

}  // namespace fedpar
