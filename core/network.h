// Network conditions between the server and its clients ([network], docs/network.md): link
// profiles (pure data), each client's resolved profile, and the seeded draws that decide a
// client's availability in a round, a message's jitter and whether it is lost. Emulated mode
// delays real messages (transport/shaped_link.h); simulated mode computes each round's time from
// the bytes and compute times it measured (NetworkClock below) without waiting.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar {

struct Checkpoint;
struct RoundRecord;

// One link between the server and a client. Latency is one way (a round trip is twice it).
struct LinkProfile {
  std::string name;
  double down_bps = 0;      // server -> client, bit/s
  double up_bps = 0;        // client -> server, bit/s
  double latency_s = 0;     // added to every message, each way
  double jitter_s = 0;      // scale of a random extra delay per message (never negative)
  double loss = 0;          // probability that a TASK or UPDATE is lost
  double availability = 1;  // probability that the client takes part in a round
};

// The named profiles (illustrative, typical published values; docs/network.md): datacenter, wifi,
// lte, 3g. "custom" is [network.custom] and is resolved with the run config.
const std::vector<LinkProfile>& named_link_profiles();
// "datacenter, wifi, lte, 3g, custom": for errors naming the valid profiles.
std::string valid_profile_names();
// The profile called `name`, one of the named or "custom" (checked); else an Error naming `key`
// and the valid names.
LinkProfile link_profile(const std::string& name, const LinkProfile& custom,
                         const std::string& key);
// Throws Error naming the profile and the first number out of its range.
void check_link_profile(const LinkProfile& p);

enum class NetworkMode { kOff, kEmulated, kSimulated };
enum class JitterKind { kUniform, kNormal };  // U[0, j) | |N(0, 1)| * j

struct NetworkSpec {
  NetworkMode mode = NetworkMode::kOff;
  JitterKind jitter = JitterKind::kUniform;
  std::vector<LinkProfile> profiles;     // those the run uses, each once
  std::vector<uint32_t> client_profile;  // each client's index into `profiles`
  // Simulated mode: the server's own link, which every client's messages cross and share (its
  // uplink the TASKs, its downlink the UPDATEs); none: the server's side never limits.
  std::optional<LinkProfile> server;
  // Simulated mode, synchronous parameter-server rounds: an update the clock brings in after the
  // round's deadline (wait_seconds) is left out of the round, as a real deadline leaves it out.
  bool drop_late = false;
  // A synchronous round draws its clients from those available in it (network.sample_from =
  // "available", as a deployment picks among the devices checked in), not from all of them
  // leaving out the unavailable ones drawn.
  bool sample_available = false;
  // How many rounds one availability draw holds for a client (network.availability_rounds): 1
  // draws every round anew; L > 1 keeps a client on or off for stretches of L rounds, each
  // client's stretches offset by its own draw so that they do not all turn over at once.
  uint32_t availability_rounds = 1;
  bool on() const { return mode != NetworkMode::kOff; }
  // Client c's link (the first profile for an id beyond the partition).
  const LinkProfile& of(uint32_t c) const {
    return profiles[c < client_profile.size() ? client_profile[c] : 0];
  }
  bool all_available() const;  // every client's availability is 1
  bool lossless() const;       // every client's link has loss 0
};

const char* network_mode_name(NetworkMode m);  // "off" | "emulated" | "simulated"

// The per-client resolution of [network] (run_spec.cc reads the keys): `heterogeneous` ("wifi:0.5,
// lte:0.5", weights summing to 1) draws each client's profile from (seed, "net-profile", client),
// else every client gets `profile`; then `overrides` (client -> name) replace single clients.
// `custom` is the profile named "custom". Throws Error naming the key and the valid profiles.
NetworkSpec resolve_network(NetworkMode mode, JitterKind jitter, const std::string& profile,
                            const std::string& heterogeneous,
                            const std::vector<std::pair<uint32_t, std::string>>& overrides,
                            const LinkProfile& custom, uint64_t seed, size_t clients);

// Seconds to put `bytes` on a link of `bps` bit/s.
inline double transfer_seconds(uint64_t bytes, double bps) { return double(bytes) * 8.0 / bps; }
// A message from one process's link to another's (no jitter): `bytes` on the wire at the slower
// of the sender's uplink and the receiver's downlink, and the latency of both links after.
inline double wire_seconds(const NetworkSpec& n, uint32_t from, uint32_t to, uint64_t bytes) {
  return transfer_seconds(bytes, std::min(n.of(from).up_bps, n.of(to).down_bps));
}
inline double latency_seconds(const NetworkSpec& n, uint32_t from, uint32_t to) {
  return n.of(from).latency_s + n.of(to).latency_s;
}
// A worker's sends around a ring to its neighbour: `bytes` in all, in `steps` sends.
inline double ring_send_seconds(const NetworkSpec& n, uint32_t from, uint32_t to, uint64_t bytes,
                                uint64_t steps) {
  return wire_seconds(n, from, to, bytes) + double(steps) * latency_seconds(n, from, to);
}

// The least seconds a round takes on link `p`: a TASK of `down_bytes` down, then `updates`
// UPDATEs of `update_bytes` up one after the other (no compute, no jitter). A deadline shorter
// than this is missed every round.
inline double least_round_seconds(const LinkProfile& p, uint64_t down_bytes, uint64_t update_bytes,
                                  size_t updates) {
  return transfer_seconds(down_bytes, p.down_bps) + p.latency_s +
         double(updates) * transfer_seconds(update_bytes, p.up_bps) + p.latency_s;
}

// The seeded draws. Purposes: "net-available" (client, round; with availability_rounds L > 1
// (client, (round + offset) / L), the offset below L from "net-available-offset" (client)); the
// jitter and loss of a message are keyed by a direction ("up" | "down"), an id (the virtual client;
// in emulation a TASK's process link), the round, and `repeat`: how many messages with the same id
// and round came right before it on the link (0 for the one TASK and UPDATE per client of a
// synchronous round; a master's forward and backward, or an async client's second task on one model
// version, are repeats, each drawn from its own stream). Keyed by round, not by message count, so a
// resumed run draws what the uninterrupted one drew for the same round.
bool client_available(const NetworkSpec& n, uint64_t seed, uint32_t client, uint64_t round);
double jitter_seconds(JitterKind kind, double scale, uint64_t seed, std::string_view direction,
                      uint32_t id, uint32_t round, uint32_t repeat = 0);
bool message_lost(double loss, uint64_t seed, std::string_view direction, uint32_t id,
                  uint32_t round, uint32_t repeat = 0);

// Who of a round's sampled clients takes part: those available (the rest go to rec.unavailable)
// and, in simulated mode, whose TASK and UPDATE are not lost (the rest go to rec.simulated_lost).
// Mode off returns `sampled` and leaves `rec` as it is.
std::vector<uint32_t> network_participants(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                           std::vector<uint32_t> sampled, RoundRecord& rec);

// One simulated message between the server and `client` on the client's link alone: its bytes
// over the link's bandwidth in that direction ("down" | "up"), plus the latency and the seeded
// jitter keyed by (seed, direction, client, round, repeat).
double message_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round, uint32_t client,
                       std::string_view direction, uint64_t bytes, uint32_t repeat = 0);

// One message of a simulated round in one direction, ready to leave at `start`.
struct SimulatedMessage {
  uint32_t client = 0;
  uint64_t bytes = 0;
  double start = 0;
};
// When each arrives. Without a server link each crosses its client's link alone (start +
// message_seconds); with one they share the server's side (its uplink the TASKs ("down"), its
// downlink the reports ("up"): shared_link.h), each at most at its client's bandwidth, and pay its
// latency too.
std::vector<double> simulated_arrivals(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                       std::string_view direction,
                                       const std::vector<SimulatedMessage>& messages,
                                       uint32_t repeat = 0);

// One participant of a simulated round.
struct SimulatedClient {
  uint32_t client = 0;
  uint64_t down_bytes = 0, up_bytes = 0;
  double compute_seconds = 0;
};
// The simulated seconds of one synchronous round: the slowest participant's
// down (bytes / down_bps + latency + jitter) + compute + up (bytes / up_bps + latency + jitter),
// capped at the deadline, or the deadline when a message was lost or a client missed it; plus the
// aggregation. Jitter draws are keyed by (seed, direction, client, round). With a server link the
// round's TASKs share its uplink and its UPDATEs its downlink (core/shared_link.h), each message
// at most as fast as its client's link, and each pays the server's latency too.
double simulated_round_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                               const std::vector<SimulatedClient>& clients, double deadline,
                               bool deadline_hit, double aggregate_seconds);
// When each participant's update is in (TASK down + compute + UPDATE up, the server link shared),
// in the order given; not capped at any deadline.
std::vector<double> simulated_reply_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                            const std::vector<SimulatedClient>& clients);
// The slowest participant's seconds, not capped at any deadline (0 without participants).
double simulated_exchange_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                  const std::vector<SimulatedClient>& clients);

// One worker of a simulated ring all-reduce round. Workers talk to each other through their
// access links: a worker's sends cross its uplink and its next neighbour's downlink.
struct SimulatedWorker {
  uint32_t client = 0, next_client = 0;   // whose link profiles: its first client, its neighbour's
  uint64_t down_bytes = 0, up_bytes = 0;  // the TASK from the server, the report back
  uint64_t ring_bytes = 0;                // what it sent around the ring this round
  uint32_t ring_steps = 0;                // 2 (N - 1): each pays both access links' latency
  double compute_seconds = 0;
};
// The simulated seconds of one ring round, which moves in lockstep: the last worker to have its
// gradient (TASK down: bytes / down_bps + latency + jitter, + compute) + the slowest worker's ring
// sends (its bytes over the slower of its uplink and its neighbour's downlink, plus ring_steps x
// both links' latency; no jitter) + the last report up; plus the aggregation. A server link is
// shared by the TASKs and by the reports; the ring's sends do not cross it.
double simulated_ring_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                              const std::vector<SimulatedWorker>& workers,
                              double aggregate_seconds);

// One worker's slice of a master step (each virtual client its own link): the model down, its
// logits up, d(loss)/d(logits) down, its parameter gradient up.
struct SimulatedSlice {
  uint32_t client = 0;
  uint64_t model_bytes = 0, logits_bytes = 0, dlogits_bytes = 0, gradient_bytes = 0;
  double forward_seconds = 0, backward_seconds = 0;
};
// The simulated seconds of one master step, two synchronous halves with the master's loss between
// them: the last logits in (model down + forward + logits up) + the loss + the last gradient in
// (dlogits down + backward + gradient up) + the aggregation. Each half's messages are those of a
// synchronous round (simulated_round_seconds, the server link shared alike); the second half's
// jitter is drawn as a repeat (network.h: the draws).
double simulated_master_seconds(const NetworkSpec& n, uint64_t seed, uint64_t round,
                                const std::vector<SimulatedSlice>& slices, double loss_seconds,
                                double aggregate_seconds);

// A run's network time axis: fills each synchronous round record's simulated_seconds and
// simulated_time (simulated mode, from the record's bytes and timings) or emulated_seconds and
// emulated_time (emulated mode, the round's wall time under emulation).
class NetworkClock {
 public:
  NetworkClock(const NetworkSpec& n, uint64_t seed, double deadline)
      : n_(n), seed_(seed), deadline_(deadline) {}
  // `waited_for_missing`: a client in rec.missing was asked (a dropped process's clients are
  // sampled but not asked, so the round did not wait out its deadline for them).
  void end_round(RoundRecord& rec, uint64_t round, double wall_seconds,
                 bool waited_for_missing = true);
  // A ring all-reduce round (simulated mode; the other modes do not apply to the ring).
  void end_ring_round(RoundRecord& rec, uint64_t round,
                      const std::vector<SimulatedWorker>& workers);
  // A master step (simulated mode), its loss and aggregation seconds from the record.
  void end_master_round(RoundRecord& rec, uint64_t round,
                        const std::vector<SimulatedSlice>& slices);
  // The last synchronous round's slowest participant, when the deadline cut its time short
  // although every update was aggregated (without network.drop_late, none is left out).
  std::optional<double> over_deadline() const { return over_deadline_; }
  // A round whose simulated seconds its plan computed (pipeline, tensor: simulated_parallel.h).
  void add_simulated_seconds(RoundRecord& rec, double seconds);
  // The running sum in a checkpoint's meta ("network_time"), and back when a run resumes.
  void save(Checkpoint& c) const;
  void load(const Checkpoint& c);

 private:
  const NetworkSpec& n_;
  uint64_t seed_;
  double deadline_, total_ = 0;
  std::optional<double> over_deadline_;
};

// What network a run used (network.json in its results): the mode, the profiles' numbers, each
// client's profile name and the server's link (null: none). Emulated links are per process (a
// process's first client's profile, for all it hosts): given the clients each process hosts,
// `process_links` says which link each has.
nlohmann::json network_json(const NetworkSpec& n,
                            std::span<const std::vector<uint32_t>> processes = {});

}  // namespace fedpar
