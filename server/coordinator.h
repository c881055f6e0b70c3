// The server's side of the wire: one ZeroMQ ROUTER socket, the client processes behind it (their
// HELLO, their virtual clients and shards in WELCOME), byte counts per process, and validated
// receives with a deadline. Every topology's round loop (rounds.h) talks to clients through it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/messages.h"
#include "partitioners/partition.h"
#include "server/run_config.h"
#include "server/server.h"
#include "server/zmq_frames.h"

namespace fedpar {

using Clock = std::chrono::steady_clock;

// The time point `seconds` from now (the deadlines every receive takes).
inline Clock::time_point deadline_after(double seconds) {
  return std::chrono::time_point_cast<Clock::duration>(Clock::now() + std::chrono::duration<double>(seconds));
}

struct Peer {
  std::string identity;
  int slots = 1;
  std::vector<uint32_t> clients;
  uint64_t bytes_sent = 0, bytes_received = 0;
};

struct Received {
  std::string identity;
  std::vector<zmq::message_t> frames;  // without the identity frame
  std::vector<std::span<const uint8_t>> spans() const { return frame_spans(frames); }
  size_t bytes() const;
};

// A received message that parsed; `parsed` views `msg`'s frames (moving it keeps them in place).
struct Incoming {
  Received msg;
  ParsedMessage parsed;
};

// SIGINT/SIGTERM end a run at the coordinator's next wait, through the normal error path.
void install_stop_handlers();

class Coordinator {
 public:
  Coordinator(const RunSetup& s, const ServerOptions& o);
  const std::string& endpoint() const { return endpoint_; }

  // Waits up to the deadline for one message; nullopt on timeout. Throws Error on a stop signal.
  std::optional<Received> receive(Clock::time_point deadline);
  // The next message that parses (with parse_message's checks); those that do not are rejected
  // and skipped. nullopt at the deadline.
  std::optional<Incoming> receive_parsed(Clock::time_point deadline, std::span<const size_t> expected_floats = {},
                                         bool require_finite = false);
  void send(const std::string& identity, const WireMessage& m);
  // Answers a peer's bad message with ERROR and logs it; nothing else changes.
  void reject(const Received& r, const std::string& reason);
  void log(const std::string& line) const;
  // Tells every process the run is over.
  void stop_all();

  // HELLO from s.processes processes (else Error naming the command to start them), the virtual
  // clients dealt by slots, and WELCOME with each process's shards and the resolved config.
  void wait_for_clients(const Manifest& manifest, size_t num_params, const std::string& config_toml);

  // Per-process socket bytes since `before` (from bytes_snapshot()), in HELLO order.
  using ByteSnapshot = std::map<std::string, std::pair<uint64_t, uint64_t>>;  // sent, received
  ByteSnapshot bytes_snapshot() const;
  nlohmann::json per_process_bytes(const ByteSnapshot& before,
                                   const std::map<std::string, std::vector<uint32_t>>& tasks) const;
  std::pair<uint64_t, uint64_t> total_bytes() const;  // sent, received since the start

  int process_index(const std::string& identity) const;  // HELLO order, -1 if unknown
  // Whether the process `identity` hosts virtual client `client` (a peer may claim any id).
  bool hosts(const std::string& identity, uint32_t client) const;
  // Every process with the virtual clients it hosts (the tasks of topologies that use them all).
  std::map<std::string, std::vector<uint32_t>> hosted() const;
  nlohmann::json hosts_json() const;

  std::map<std::string, Peer> peers;
  std::map<uint32_t, std::string> owner;  // virtual client -> peer identity
  std::vector<std::string> order;         // processes in HELLO order (their index in metrics)
  std::set<std::string> lost;             // processes that missed a deadline: no more tasks
  uint64_t run_id = 0, round = 0;
  size_t num_clients = 0;

 private:
  const RunSetup& s_;
  const ServerOptions& opts_;
  zmq::context_t ctx_;
  zmq::socket_t sock_;
  std::string endpoint_;
};

}  // namespace fedpar
