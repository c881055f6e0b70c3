// run_rounds and make_plan; see plan.h.
#include <fmt/format.h>

#include <chrono>
#include <tuple>

#include "core/check.h"
#include "protocol/frames.h"
#include "server/plan.h"

namespace fedpar {

std::unique_ptr<Plan> make_plan(RunContext& run) {
  switch (run.s.topology) {
    case Topology::kAllReduce:
      return make_allreduce_plan(run);
    case Topology::kMaster:
      return make_master_plan(run);
    case Topology::kPipeline:
    case Topology::kTensor:
      return make_model_parallel_plan(run);
    case Topology::kParameterServer:
      break;
  }
  return run.s.regime == Regime::kAsync ? make_async_plan(run) : make_sync_plan(run);
}

bool model_due(const RunSpec& s, int r) {
  return (r + 1) % s.eval_every == 0 || r + 1 == s.rounds ||
         (s.save_params_every > 0 && (r + 1) % s.save_params_every == 0) || checkpoint_due(s, r);
}

bool checkpoint_due(const RunSpec& s, int r) {
  // the last round's too: a finished run resumed with more rounds goes on from its end
  return s.checkpoint_every > 0 && ((r + 1) % s.checkpoint_every == 0 || r + 1 == s.rounds);
}

bool hash_due(const RunSpec& s, int r) { return (r + 1) % s.hash_every == 0 || r + 1 == s.rounds; }

WorkerRecord worker_record(uint32_t process, const Reply& reply) {
  const UpdateMsg& u = reply.update;
  return {process,
          u.compute_seconds,
          u.allreduce_seconds,
          u.ring_bytes_sent,
          u.ring_bytes_received,
          u.parameter_bytes,
          u.activation_bytes,
          reply.in.msg.bytes()};
}

void run_rounds(Engine& engine, RunContext& run, Plan& plan, int first) {
  plan.begin(engine);
  const auto started = std::chrono::steady_clock::now();
  for (int r = first; r < run.s.rounds; ++r) {
    engine.round = uint64_t(r);
    engine.admit_newcomers([&] { return plan.client_state(); });
    const auto bytes_before = engine.bytes_snapshot();
    RoundRecord rec{.round = r + 1, .topology = plan.topology()};
    std::string summary;
    std::vector<float> before = run.params;  // finite updates can still overflow the server's step
    try {
      summary = plan.round(engine, rec);
    } catch (const Diverged& d) {  // the model the server last held is the last finite one
      run.end_diverged(r, rec, engine, d.what());
      break;
    }
    if (plan.holds_model_after(r)) {
      if (const size_t j = first_non_finite(run.params); j < run.params.size()) {
        const std::string why = fmt::format(
            "round {}: the server's step left a non-finite value ({}) at index {} of the model",
            r + 1, run.params[j], j);
        run.params = std::move(before);
        run.end_diverged(r, rec, engine, why);
        break;
      }
      run.params_round = r + 1;
    }
    std::tie(rec.bytes_sent_total, rec.bytes_received_total) = engine.total_bytes();
    rec.processes = engine.per_process_bytes(bytes_before, plan.tasks(engine));
    for (const auto& p : rec.processes)
      rec.server_bytes_sent += p.bytes_down, rec.server_bytes_received += p.bytes_up;
    if (run.end_round(r, rec, engine, summary)) break;
    if (checkpoint_due(run.s, r)) {
      plan.pull_state(engine);
      run.checkpoint(r, plan, engine);
    }
  }
  run.rounds_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace fedpar
