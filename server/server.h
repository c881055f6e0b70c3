// The fedpar server process: binds a ZeroMQ ROUTER socket, waits for the client processes, gives
// them their virtual clients and shards, runs the rounds (TASK out, UPDATE in, strategy), evaluates,
// and writes results/<run>/. Peers' input is validated and answered, never trusted.
#pragma once

#include <string>

#include "core/config.h"

namespace fedpar {

struct ServerOptions {
  std::string endpoint_file;  // where to write the bound endpoint (tcp port * resolved)
  bool quiet = false;
};

// Returns the exit code; throws Error for problems found before or during the run.
int run_server(Config cfg, const ServerOptions& opts);

}  // namespace fedpar
