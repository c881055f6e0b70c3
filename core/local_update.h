// What one virtual client computes in a round, on its own shard, from the model it was sent:
// one gradient (the `gradient` regime: synchronous SGD / parameter server) or K local SGD steps /
// E local epochs whose model delta it returns (the `model` regime: FedAvg / local SGD; FedProx
// adds mu (w - w_sent) to every local gradient, the gradient of (mu / 2) ||w - w_sent||^2).
// No sockets: the client process wraps this; tests call it directly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/batch_buffer.h"
#include "core/dataset.h"
#include "core/loss_scaler.h"
#include "core/model.h"
#include "core/optimizer.h"

namespace fedpar {

enum class LocalWork { kGradient, kLocalTrain };

struct Task {
  LocalWork kind = LocalWork::kGradient;
  uint64_t round = 0;
  int64_t batch = 0;     // 0 = the whole shard; else samples per gradient / local step
  int local_steps = 1;   // local train: K steps, used when local_epochs == 0
  int local_epochs = 0;  // local train: E passes over the shard
  float lr = 0.1f;       // local train: client learning rate
  SgdOptions sgd;        // local train: client optimizer, fresh every round
  float prox_mu = 0;     // local train: FedProx's mu (below; 0: FedAvg)
  bool drift = false;    // local train: also return `linear` (diagnostics.drift)
  // local train: SCAFFOLD's c - c_i, added to every local gradient (empty: none; core/scaffold.h),
  // or, when correction_after_step, subtracted as lr (c - c_i) from the weights after every
  // optimizer step (NIID-Bench's form: outside the momentum)
  std::span<const float> correction;
  bool correction_after_step = false;
  // local train, heterogeneous work: above local_steps (local_epochs), each (client, round) draws
  // its steps (epochs) uniformly from local_steps..local_steps_max, from (seed, "local-work",
  // client, round); 0 = every client does the same
  int local_steps_max = 0, local_epochs_max = 0;
  // local train: each step draws a fresh batch of the shard, the first as a gradient task's
  // (gradient_batch), instead of slicing passes of a reshuffled shard (local.sampling)
  bool independent_batches = false;
  // Every gradient (a gradient task's, each local step's) in this many micro-batches: the same
  // mean over the batch, the activations of a micro-batch at a time ([optimizer] accumulate).
  int accumulate = 1;
  // fp16 ([optimizer] precision): the loss is scaled by it, and a gradient that overflows is
  // computed again at the scale it backs off to. Null: no loss scaling.
  LossScaler* scaler = nullptr;
};

struct LocalResult {
  std::vector<float> values;      // gradient of the mean loss, or (local model - sent model)
  uint64_t num_samples = 0;       // n_k: samples the update stands for (its weight)
  double loss_sum = 0;            // summed loss over the samples seen, at the params used
  int64_t samples_processed = 0;  // forward/backward passes, for cost accounting
  int64_t local_steps = 0;        // local train: the optimizer steps taken (FedNova's tau_i)
  // Local train with task.drift: K times the first applied step, i.e. K steps of the gradient
  // taken at the sent model (-K lr g_k(w) without momentum). The server averages these like the
  // deltas; the distance between the two averages is the round's drift (docs/suites.md).
  std::vector<float> linear;
};

// The rows of a gradient task on a batch of b: the whole shard in index order when b covers it,
// else b of them drawn without replacement from (seed, "batch", client, round). The `master`
// topology's server computes the same rows to hold their labels.
std::vector<uint32_t> gradient_batch(std::span<const uint32_t> shard, int64_t batch, uint64_t seed,
                                     uint32_t client, uint64_t round);

// The optimizer steps client `client` takes in local-train `task`'s round on a shard of
// `shard_size` samples: its local steps, or its epochs times the batches per pass, drawn as
// Task::local_steps_max (local_epochs_max) says. The server computes it too (FedNova's tau_i),
// rather than trust a client to report it.
int64_t local_steps_taken(const Task& task, size_t shard_size, uint64_t seed, uint32_t client);

// Randomness: a gradient on a batch draws it from (seed, "batch", client, round); local training
// reshuffles its shard each local epoch from (seed, "local-shuffle", client, round), or with
// independent_batches draws each step's batch on from the gradient's stream (its first batch is
// the gradient task's).
// `buffer`, when given, holds batches across calls, so a full shard is gathered only once.
LocalResult compute_update(Model& model, const Dataset& data, std::span<const uint32_t> shard,
                           std::span<const float> params, const Task& task, uint64_t seed,
                           uint32_t client, BatchBuffer* buffer = nullptr);

}  // namespace fedpar
