// run_server: resolves the run, waits for the client processes and hands the rounds to the loop
// of its regime and topology (rounds.h); see server.h.
#include "server/server.h"

#include <unistd.h>

#include "core/hash.h"
#include "server/coordinator.h"
#include "server/rounds.h"
#include "server/run_context.h"

namespace fedpar {

int run_server(Config cfg, const ServerOptions& opts) {
  const RunSetup s = resolve_run_setup(cfg);
  install_stop_handlers();
  cfg.set("name", s.name);
  Coordinator co(s, opts);
  RunContext run(cfg, s);
  co.run_id = hash_bytes(&s.seed, sizeof(s.seed), ::getpid());
  try {
    co.wait_for_clients(run.manifest, run.params.size(), cfg.to_toml());  // those that came hear STOP on failure
    switch (s.topology) {
      case Topology::kAllReduce: run_allreduce_rounds(co, run); break;
      case Topology::kMaster: run_master_rounds(co, run); break;
      case Topology::kParameterServer:
        if (s.regime == Regime::kAsync) run_async_rounds(co, run);
        else run_sync_rounds(co, run);
        break;
    }
  } catch (...) {
    co.stop_all();
    throw;
  }
  co.stop_all();
  return run.finish(co);
}

}  // namespace fedpar
