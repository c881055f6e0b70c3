// run_server: resolves the run, binds the transport, waits for the client processes and runs the
// plan of its regime and topology on the round engine; see server.h.
#include "server/server.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/hash.h"
#include "server/engine.h"
#include "server/plan.h"
#include "server/run_context.h"
#include "transport/shaped_link.h"

namespace fedpar {
namespace {

void write_endpoint(const std::string& file, const std::string& endpoint) {
  if (file.empty()) return;
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << endpoint << "\n";
  std::filesystem::rename(tmp, file);
}

}  // namespace

int run_server(Config cfg, const ServerOptions& opts) {
  const RunSpec s = resolve_run_spec(cfg);
  install_stop_handlers();
  cfg.set("name", s.name);
  const auto transport =
      shape_transport(bind_zmq_transport(s.bind, opts.context), s.network, s.seed);
  write_endpoint(opts.endpoint_file, transport->endpoint());
  RunContext run(cfg, s);
  Engine engine(s, *transport, opts.quiet, run.model.layout());
  if (s.network.on()) run.out.write_json("network.json", network_json(s.network));
  engine.run_id = hash_bytes(&s.seed, sizeof(s.seed), ::getpid());
  const auto plan = make_plan(run);  // its refusals (a split that does not divide) come first
  try {
    engine.welcome_clients(run.manifest, run.params.size(),
                           cfg.to_toml());  // those that came hear STOP on failure
    run_rounds(engine, run, *plan);
  } catch (...) {
    engine.stop_all();
    throw;
  }
  engine.stop_all();
  return run.finish(engine);
}

}  // namespace fedpar
