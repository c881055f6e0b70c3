// run_rounds and make_plan; see plan.h.
#include <fmt/format.h>

#include "core/check.h"
#include "server/plan.h"

namespace fedpar {

std::unique_ptr<Plan> make_plan(RunContext& run) {
  switch (run.s.topology) {
    case Topology::kAllReduce: return make_allreduce_plan(run);
    case Topology::kMaster: return make_master_plan(run);
    case Topology::kParameterServer: break;
  }
  return run.s.regime == Regime::kAsync ? make_async_plan(run) : make_sync_plan(run);
}

void run_rounds(Engine& engine, RunContext& run, Plan& plan) {
  plan.begin(engine);
  for (int r = 0; r < run.s.rounds; ++r) {
    engine.round = uint64_t(r);
    const auto bytes_before = engine.bytes_snapshot();
    nlohmann::json rec = {{"kind", "round"}, {"round", r + 1}, {"topology", plan.topology()}};
    const std::string summary = plan.round(engine, rec);
    const auto [sent, received] = engine.total_bytes();
    rec["bytes_sent_total"] = sent;
    rec["bytes_received_total"] = received;
    rec["processes"] = engine.per_process_bytes(bytes_before, plan.tasks(engine));
    uint64_t down = 0, up = 0;  // the server's own traffic this round
    for (const auto& p : rec["processes"]) down += p["bytes_down"].get<uint64_t>(), up += p["bytes_up"].get<uint64_t>();
    rec["server_bytes_sent"] = down;
    rec["server_bytes_received"] = up;
    if (run.end_round(r, rec, engine, summary)) break;
  }
}

}  // namespace fedpar
