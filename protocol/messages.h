// The typed messages of a run, one struct each, on top of the framing (frames.h): every message a
// server and its clients exchange is built by one encode and read by one decode, which checks each
// field's presence, type and range and returns a one-line reason instead of throwing. Vectors stay
// views of the received frames (or of the sender's memory): nothing is copied here.
//
//   client -> server   HELLO, RING (endpoint), UPDATE (any task's answer), ERROR
//   server -> client   WELCOME, RING (assignment), TASK, STOP (how the run ended), ERROR, PING
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/frames.h"

namespace fedpar {

// What a TASK asks of a client process, and so what its UPDATEs answer.
enum class TaskKind : uint16_t {
  kGradient = 1,    // one gradient per listed client (parameter server, async)
  kLocalTrain = 2,  // K local steps / E epochs -> model delta (model averaging)
  kForward = 3,     // master topology: logits of each client's slice of the batch
  kBackward = 4,    // master topology: parameter gradients from the dlogits sent
  kAllReduce = 5,   // allreduce topology: one ring step, then a report
  kPipeline = 6,    // pipeline topology: one batch through the stages, then a report per stage
  kTensor = 7,      // tensor topology: one batch through the column/row slices, a report per rank
  kState = 8,       // before a checkpoint: each listed client's error-feedback residual
};
// "gradient", "local", "forward", "backward", "allreduce", "pipeline", "tensor", "state"
const char* task_kind_name(TaskKind k);

template <typename T>
using Decoded = std::variant<T, ProtocolError>;

struct HelloMsg {
  int64_t slots = 1;  // virtual clients this process offers to host (1 .. kMaxSlots)
  int64_t pid = 0;
  // fedpar launch: run_config_hash of the config this rank was started with, so that a rank of
  // another job (or started with other flags) is refused, not taken in; "" otherwise
  std::string run_config;
  std::string device;  // what the process computes on when its command says (--device: cpu,
                       // cuda); "" leaves it to the run config's `device`
  // what its bytes depend on (build_description, machine_description): a process of another build
  // or kernels rounds apart, so the run records and warns of it ("" from an older client)
  std::string build, machine;
  static constexpr int64_t kMaxSlots = 1000000;
};

// The run as the server resolved it (its config text, resolved by every process the same way:
// run_spec_from_toml), the virtual clients this process hosts and their shards.
struct WelcomeMsg {
  std::string config_toml;
  std::vector<uint32_t> clients;
  std::vector<std::vector<uint32_t>> shards;  // one per client, same order
  uint64_t num_params = 0;
  std::string dataset_hash;
  // A resumed SCAFFOLD run: the control variates c_i of these hosted clients (vector k belongs
  // to control_clients[k]), from the server's checkpoint; the others start at zero.
  std::vector<uint32_t> control_clients;
  std::vector<std::span<const float>> controls;
  // A resumed run with error feedback: these hosted clients' residuals (after the controls among
  // the vectors) and the learning rate each stands for; the others start at zero.
  std::vector<uint32_t> residual_clients;
  std::vector<float> residual_lrs;
  std::vector<std::span<const float>> residuals;
};

// RING, client -> server: where this worker listens for its previous neighbour.
// A pipeline or tensor process of a [grid] with data replicas also listens for the replica ring.
// With [security], `key` is the worker's link public key (transport/link_security.h).
struct RingEndpointMsg {
  std::string endpoint;
  std::string replica_endpoint;  // "" without replicas
  std::string key;               // "" in a plaintext run
};
// RING, server -> client: its rank, the ring's size and the next rank's endpoint; a pipeline
// stage also hears its previous stage's ("" for the first stage, and `next` "" for the last).
// In a [grid], rank and size are within the model-parallel group; `replica` of `replicas` names
// the group, and `replica_next` is where the same part of the next replica listens.
// With [security], each neighbour's link key comes with its endpoint, and `keys` holds every
// worker's of the run: those who may connect to this one.
struct RingAssignmentMsg {
  int64_t rank = 0, size = 1;
  std::string next, prev;
  int64_t replica = 0, replicas = 1;
  std::string replica_next;
  std::string next_key, prev_key, replica_next_key;
  std::vector<std::string> keys;
  // allreduce.elastic: > 0 re-forms the ring without the dead; the header's round is redone
  int64_t epoch = 0;
  // allreduce.backend = "nccl": the communicator's unique id, 256 hex digits ("" otherwise)
  std::string nccl_id;
};

struct TaskMsg {
  TaskKind kind = TaskKind::kGradient;
  std::vector<uint32_t> clients;  // whom it is for (each process serves those it hosts)
  int64_t batch = 0;              // 0 = the whole shard
  // local train
  int64_t steps = 1, epochs = 0;
  double lr = 0.1, momentum = 0;
  bool drift = false;
  bool control = false;  // SCAFFOLD: the second vector is the server's control variate c
  // async: names the batch draw (the client's task count); absent: the round names it
  std::optional<uint64_t> draw;
  // allreduce; send_state: with the model, the optimizer's velocity (for a checkpoint)
  double total_weight = 0;
  bool send_state = false;
  // allreduce and pipeline
  bool hash = false, send_params = false;
  // gradient / local / forward: the model; backward: one dlogits per listed client;
  // allreduce: the starting model with the first task (and a resumed run's velocity), else none
  std::vector<std::span<const float>> vectors;
  EncodedVectors encoded;  // sent in place of `vectors` when set (a compressed downlink)
  bool delta = false;      // the model vector is the change to add to the client's replica
};

// A client's answer to one task, for one virtual client (or, for allreduce, for its rank).
struct UpdateMsg {
  TaskKind kind = TaskKind::kGradient;  // the task it answers
  uint64_t num_samples = 0;             // n_k: samples behind it
  double loss_sum = 0;                  // summed loss over those samples
  int64_t samples_processed = 0;        // forward/backward passes, for cost accounting
  double compute_seconds = 0;
  uint64_t parameter_bytes = 0, activation_bytes = 0;
  uint64_t peak_rss_bytes = 0;  // the sending process's peak resident memory so far (0: unknown)
  // allreduce, pipeline and tensor reports (a stage's links stand in for the ring)
  double allreduce_seconds = 0;
  uint64_t ring_bytes_sent = 0, ring_bytes_received = 0;
  // pipeline and tensor in a [grid]: the ring across data replicas
  double replica_seconds = 0;
  uint64_t replica_bytes_sent = 0, replica_bytes_received = 0;
  // [network] simulated: a pipeline stage's ops' compute and what each sent its neighbour, in
  // schedule order; a tensor rank's sends around its group's ring (simulated_parallel.h)
  std::vector<double> op_seconds;
  std::vector<uint64_t> op_bytes;
  uint32_t ring_steps = 0;
  std::string hash;  // the replica's hash when asked for
  std::vector<std::span<const float>> vectors;
  EncodedVectors encoded;  // sent in place of `vectors` when set (a compressed uplink)

  // The bytes of its vectors as float32 (a model or a part sent back, its velocity with it).
  uint64_t vector_bytes() const {
    uint64_t n = 0;
    for (const auto& v : vectors) n += v.size_bytes();
    return n;
  }
};

struct ErrorMsg {
  std::string reason;
};

// STOP: how the run ended, so a client process run by hand can say so and exit accordingly.
enum class StopOutcome : uint16_t {
  kCompleted = 1,  // the run's rounds are done (or it ended on a diverged model, as it records)
  kStopped = 2,    // the server was stopped (a signal) before the run completed
  kFailed = 3,     // the run failed (a process missing at a deadline, a failed ring, ...)
  kLeftOut = 4,    // the run goes on without this process (an elastic ring re-formed)
};
const char* stop_outcome_name(StopOutcome o);  // "completed", "stopped", "failed", "left-out"

struct StopMsg {
  StopOutcome outcome = StopOutcome::kCompleted;
  std::string reason;  // "" when completed
};

// Header fields every message carries beside its body.
struct Envelope {
  uint32_t client = 0;
  uint64_t run = 0, round = 0;
};

// `owner` keeps what the vectors view alive until ZeroMQ has sent them (zero copy); null copies.
WireMessage encode(const HelloMsg& m);
WireMessage encode(const WelcomeMsg& m, const Envelope& e);
WireMessage encode(const RingEndpointMsg& m, const Envelope& e);
WireMessage encode(const RingAssignmentMsg& m, const Envelope& e);
WireMessage encode(TaskMsg m, const Envelope& e, std::shared_ptr<const void> owner = {});
WireMessage encode(UpdateMsg m, const Envelope& e, std::shared_ptr<const void> owner = {});
WireMessage encode(const ErrorMsg& m, const Envelope& e);
WireMessage encode(const StopMsg& m, const Envelope& e);
WireMessage encode_ready(const Envelope& e);  // an empty body: the header says it
WireMessage encode_ping(const Envelope& e);   // the same

// The bytes an UPDATE's body spends on op_seconds, op_bytes and ring_steps: what a simulated
// network's clock is told, not what a real run would send, so the clock leaves them out.
size_t simulation_extra_bytes(const UpdateMsg& m);

// Each checks the header's type and the body; vectors are taken from `p` as they are (their
// count and lengths were checked by parse_message where the receiver knew them).
Decoded<HelloMsg> decode_hello(const ParsedMessage& p);
Decoded<WelcomeMsg> decode_welcome(const ParsedMessage& p);
Decoded<RingEndpointMsg> decode_ring_endpoint(const ParsedMessage& p);
Decoded<RingAssignmentMsg> decode_ring_assignment(const ParsedMessage& p);
Decoded<TaskMsg> decode_task(const ParsedMessage& p);
Decoded<UpdateMsg> decode_update(const ParsedMessage& p);
Decoded<ErrorMsg> decode_error(const ParsedMessage& p);
Decoded<StopMsg> decode_stop(const ParsedMessage& p);

}  // namespace fedpar
