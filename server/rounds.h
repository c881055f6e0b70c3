// The round loops, one per way of training, on a shared Coordinator (the clients) and RunContext
// (data, model, results). Each runs until s.rounds or stop_at_accuracy and throws Error when the
// run cannot go on; run_server (server.cc) picks one from the config's regime and topology.
#pragma once

#include "server/coordinator.h"
#include "server/run_context.h"

namespace fedpar {

// The synchronous regimes: `gradient` on the parameter-server topology (workers upload gradients,
// the server averages, steps, broadcasts) and `model` (FedAvg: local steps, deltas averaged).
void run_sync_rounds(Coordinator& co, RunContext& run);
// `allreduce`: the workers sum their gradients in a ring among themselves and each steps its own
// replica; the server only starts the ring, evaluates, logs and checks the replicas' hashes.
void run_allreduce_rounds(Coordinator& co, RunContext& run);
// `master`: the server holds the batch's loss: workers send logits, get dlogits back, send
// parameter gradients; the server sums, steps and broadcasts.
void run_master_rounds(Coordinator& co, RunContext& run);
// `async`: every gradient is applied as it arrives, with its staleness logged (updates.jsonl).
void run_async_rounds(Coordinator& co, RunContext& run);

}  // namespace fedpar
