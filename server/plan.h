// One way of training, as the round engine runs it: a plan sends its tasks, collects the replies
// through Engine::collect (which owns receiving, validation, deadlines and rejections), reduces
// them through a Strategy or the optimizer, and fills the round record's own fields. run_rounds
// owns the rest of a round: its number, clock, bytes, the common record fields, evaluation and
// the end of the run.
#pragma once

#include <memory>
#include <string>

#include "core/checkpoint.h"
#include "core/run_records.h"
#include "server/engine.h"
#include "server/run_context.h"

namespace fedpar {

class Plan {
 public:
  virtual ~Plan() = default;
  virtual const char* topology() const = 0;  // the record's "topology"
  // Once, after WELCOME: every process ready (the ring and model-parallel plans form their links
  // here instead, a worker's RING saying it is ready).
  virtual void begin(Engine& engine) { engine.await_ready(); }
  // Round engine.round: fills `rec` with the plan's fields and returns the log line's summary.
  // Throws Error when the run cannot go on.
  virtual std::string round(Engine& engine, RoundRecord& rec) = 0;
  // Whether run.params is the model after round r (0-based) once round() returned: the ring and
  // model-parallel workers send it only on model_due rounds (what a diverged run keeps).
  virtual bool holds_model_after(int) const { return true; }
  // The processes' tasks this round, for the per-process byte accounting (default: all hosted).
  virtual std::map<std::string, std::vector<uint32_t>> tasks(const Engine& engine) const {
    return engine.hosted();
  }

  // Why a process started during the run cannot take a lost one's place ("" where it can:
  // Engine::admit_newcomers).
  virtual std::string replacement_refusal() const {
    return std::string("the ") + topology() + " topology keeps its processes in fixed places";
  }
  // Checkpoints (checkpoint_every, --resume): why this plan cannot make one ("" when it can);
  // what it must fetch from the clients first (pull_state: error-feedback residuals); its state
  // beyond run.params into a checkpoint and back; and, resuming, the per-client state that goes
  // to the client processes in their WELCOME (SCAFFOLD's c_i, residuals).
  virtual std::string checkpoint_refusal() const {
    return std::string("the ") + topology() + " topology keeps state in its workers";
  }
  virtual void pull_state(Engine&) {}
  virtual void save_state(Checkpoint&) const {}
  virtual void load_state(const Checkpoint&) {}
  virtual const ClientState& client_state() const {
    static const ClientState none;
    return none;
  }
};

// parameter server (gradient regime) and model averaging (FedAvg): one task per sampled client.
std::unique_ptr<Plan> make_sync_plan(RunContext& run);
// master: the server holds the batch's loss: logits in, dlogits out, gradients in, one step.
std::unique_ptr<Plan> make_master_plan(RunContext& run);
// allreduce: the workers sum their gradients in a ring and step their replicas; the server starts
// the steps, checks the replicas' hashes and takes rank 0's model when it evaluates.
std::unique_ptr<Plan> make_allreduce_plan(RunContext& run);
// pipeline and tensor (and their [grid]s with data replicas): each process holds a part of the
// model (a stage's layers, a rank's column/row slices); the server starts each batch, checks the
// replicas' hashes and puts the model together from replica 0's parts when it evaluates.
std::unique_ptr<Plan> make_model_parallel_plan(RunContext& run);
// async: every gradient applied as it arrives, staleness logged (updates.jsonl).
std::unique_ptr<Plan> make_async_plan(RunContext& run);
// The plan of the run's regime and topology.
std::unique_ptr<Plan> make_plan(RunContext& run);

// Whether the server needs the model after round r (0-based): it evaluates or saves it then. The
// topologies whose model lives in the workers (allreduce, pipeline, tensor) ask for it back.
bool model_due(const RunSpec& s, int r);  // evaluated, saved or checkpointed after round r
// Whether a checkpoint is written after round r (0-based): every checkpoint_every rounds, and
// after the last.
bool checkpoint_due(const RunSpec& s, int r);

// Whether the replicas' hashes are compared after round r (0-based): every allreduce.hash_every
// rounds and at the last.
bool hash_due(const RunSpec& s, int r);

// A worker's line in the round record (the topologies whose workers report their own steps):
// its times, link bytes and memory from its report, and the report's size.
WorkerRecord worker_record(uint32_t process, const Reply& reply);

// Runs the rounds from `first` (0-based; a resumed run's) until s.rounds or stop_at_accuracy,
// checkpointing every s.checkpoint_every rounds.
void run_rounds(Engine& engine, RunContext& run, Plan& plan, int first = 0);

}  // namespace fedpar
