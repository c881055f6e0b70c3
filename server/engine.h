// The round engine: the server's side of the wire, once for every way of training. It holds the
// client processes behind a Transport (their HELLO, their virtual clients and shards in WELCOME),
// counts bytes per process, and collects replies with a deadline: every reply is parsed, checked
// (type, round, sender, duplicates, then the plan's own checks) and either kept or answered with
// ERROR. Plans (plan.h) say only what differs: which tasks go out and what a round computes.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/run_records.h"
#include "core/run_spec.h"
#include "partitioners/manifest.h"
#include "protocol/messages.h"
#include "server/downlink.h"
#include "transport/log_throttle.h"
#include "transport/transport.h"

namespace fedpar {

// Per-client state a resumed run gives back to the client processes in their WELCOME.
struct ClientState {
  std::map<uint32_t, std::vector<float>> controls;  // SCAFFOLD's c_i
  struct Residual {
    std::vector<float> e;  // error feedback: what the uplink codec dropped so far
    float lr = 0;          // the learning rate it stands for
  };
  std::map<uint32_t, Residual> residuals;
};

struct Peer {
  std::string identity;
  int64_t slots = 1;
  int64_t pid = 0;             // as its HELLO said (for the log: which process)
  std::string device;          // what it computes on: its --device, else the run config's
  std::string build, machine;  // as its HELLO said ("" from an older client)
  std::vector<uint32_t> clients;
  uint64_t bytes_sent = 0, bytes_received = 0;
  uint64_t peak_rss_bytes = 0;                  // the largest its updates reported
  Clock::time_point last_heard = Clock::now();  // its last message of any kind
  std::optional<int64_t> joined_after_round;    // it took a lost process's place (admit_newcomers)
};

// An asked client's reply holds NaN or Inf: the training diverged (or the client is faulty), and
// no deadline would bring a finite one. run_rounds ends the run there, keeping its results.
class Diverged : public Error {
 public:
  using Error::Error;
};

// A message that parsed; `parsed` views `msg`'s frames (moving it keeps them in place).
struct Incoming {
  Received msg;
  ParsedMessage parsed;
};

// One accepted reply to a task.
struct Reply {
  Incoming in;
  UpdateMsg update;  // its vectors view in.msg's frames
  uint32_t key = 0;  // the client id, or the worker's rank
  int process = -1;  // the sender's index in HELLO order
};

// What collect() waits for. Replies are keyed by the header's client id (kClient: the sender must
// host that client) or by the sender's process index (kRank).
struct CollectSpec {
  enum class Key { kClient, kRank };
  TaskKind kind = TaskKind::kGradient;  // the task the replies answer
  std::vector<uint32_t> expected;       // the keys awaited, sorted
  Key key = Key::kClient;
  size_t want = std::numeric_limits<size_t>::max();  // stop after this many (async: 1)
  double seconds = 60;                               // the deadline, from now
  std::optional<double> after_first;  // once one reply came, the rest get at most this long
  bool check_round = true;            // the header's round must be the engine's
  // Key::kClient: the batch a gradient (or master forward) task asked for (<= 0: the whole
  // shard); a reply must report the samples the manifest gives it: min(batch, n_k), n_k for local
  // training.
  int64_t batch = 0;
  std::vector<size_t> floats;  // each reply's vector lengths; empty: the plan checks
  // An ERROR from an awaited worker (Key::kRank) ends the run (the ring's failures), or with
  // allreduce.elastic counts as its answer (Collected::failed). So does a worker's connection that
  // closed and did not come back: the run names it (its neighbours' ERRORs blame their link).
  bool errors_are_fatal = false;
  const char* rank_name = "worker";  // Key::kRank: what a key is called ("stage 1")
  const char* fatal_hint = "";       // what would let such a run go on ("; allreduce.elastic ...")
  // The plan's own checks: "" accepts, else the reason the sender is told.
  std::function<std::string(const Reply&)> accept;
  // Tasks the plan withdrew (async: one re-sent after wait_seconds), by (client, header round):
  // the owning process's answers to them are dropped without a word.
  std::function<bool(uint32_t client, uint64_t round)> withdrawn;
};

struct Collected {
  std::map<uint32_t, Reply> got;           // by key, so reductions run in key order
  std::map<uint32_t, std::string> failed;  // workers that answered with ERROR: why
  std::vector<uint32_t> missing;  // expected keys without a reply (or ERROR) at the deadline
  // of `missing`, those whose process was not connected when its task was sent, or whose
  // connection closed during the wait: not waited for (none when that was every expected key:
  // then the deadline decided)
  std::vector<uint32_t> unreachable;
  // awaited keys still unanswered when `want` answers had come: not waited for (backup_clients),
  // not missing; their replies, when they come in a later collect, are dropped without a word
  std::vector<uint32_t> released;
  double waited = 0;  // the seconds the deadline was, for messages
  // Why `missing` are missing, for messages: " within N s" when the deadline passed for some,
  // then " (K, L not reachable)" for those whose process was gone (not waited for).
  std::string missing_because() const;
};

class Engine {
 public:
  // `layout`: the model's tensors, which a codec may encode each on its own (PowerSGD).
  Engine(const RunSpec& s, Transport& t, bool quiet, const ParamLayout& layout = {});
  const std::string& endpoint() const { return transport_.endpoint(); }

  // HELLO from s.processes processes (else Error naming the command that starts them), the
  // virtual clients dealt by slots, and WELCOME with each process's shards and the resolved config
  // (and, resuming, its clients' control variates and residuals from `state`).
  void welcome_clients(const Manifest& manifest, size_t num_params, const std::string& config_toml,
                       const ClientState& state = {});
  // After WELCOME each process loads its clients' rows and builds its model, then says READY: the
  // rounds' clocks and round 1's deadline start once all have, so no round's time holds the data
  // load. A process that could not start (its ERROR: another dataset, a device this build lacks)
  // fails the run, saying which and why; one silent for wait_seconds is logged and the rounds
  // begin without waiting for it (it misses rounds like any late process).
  void await_ready();
  // RunFailed with the reason when `in` is a process's ERROR before the rounds (it could not
  // start); await_ready and the ring's rendezvous both listen for it.
  void throw_if_failed_to_start(const Incoming& in) const;

  // A peer that cannot be reached (PeerUnreachable: not connected, or its queue is full) is
  // logged, not an error: collect() then does not wait for its answer until a later send reaches
  // it. Returns whether the message went out.
  bool send(const std::string& peer, const WireMessage& m);
  // Drops process `id` from the run (no more tasks), saying why.
  void drop(const std::string& id, const std::string& why);
  void send_all(const WireMessage& m);  // every process still in the run
  // The next message that parses (frames, header, CRC); others are answered with ERROR.
  std::optional<Incoming> receive(Clock::time_point deadline, std::span<const size_t> floats = {});
  // The replies to a task; throws Diverged when an accepted one holds NaN or Inf.
  Collected collect(const CollectSpec& spec);
  // Answers a peer's bad message with ERROR and logs it (the first kLoggedRejections in full,
  // then one line a kRejectionLogSeconds with the count); nothing else changes.
  // `what` opens the log line: a bad message, or a process that came during the run turned away.
  static constexpr const char* kDroppedMessage = "dropped a message from a peer";
  static constexpr const char* kRefusedNewcomer = "refused a client process started during the run";
  void reject(const Received& r, const std::string& reason, const char* what = kDroppedMessage);
  static constexpr uint64_t kLoggedRejections = 20;
  static constexpr double kWaitNoteSeconds = 15;  // collect() logs how a longer wait stands
  // How often collect() asks whether an awaited process's connection has closed, and how long one
  // whose connection closed has to come back before its answer is no longer awaited.
  static constexpr double kConnectionCheckSeconds = 0.25;
  static constexpr double kReconnectSeconds = 2;
  static constexpr double kRejectionLogSeconds = 10;
  void log(const std::string& line) const;
  // After a round that asked the clients `asked` (of processes in the run) and heard nothing from
  // those in `absent`: each process that sent none of its asked clients' updates (with
  // `any_absent`, each with an absent client: where a lost update leaves state out of step) has
  // missed one more round in a row, each other starts over, and one that reaches `limit` misses
  // is lost (logged). A process that answered for some of its clients is alive: a lost message
  // or a straggler among its clients is not its death.
  void count_misses(std::span<const uint32_t> asked, std::span<const uint32_t> absent, int limit,
                    bool any_absent);
  // A process started during the run (`fedpar client`, as at the start) takes the place of one
  // the run lost: dropped for missed rounds, or whose connection is closed. receive() keeps its
  // HELLO; between rounds this answers it with the lost process's WELCOME (its clients, their
  // shards, and from `state` what the server holds for them: SCAFFOLD's c_i), and from the next
  // round its clients' tasks go to the newcomer. Without a place to take, or where the run's
  // clients hold state the server cannot give (refuse_replacements), the newcomer gets an ERROR
  // saying why. One that comes while a process is missing rounds (it may be dying without
  // closing its connection) waits for that place up to (drop_after_missed_rounds + 1) x
  // wait_seconds; the round after its WELCOME waits for its READY.
  void admit_newcomers(const std::function<ClientState()>& state);
  // Why no process can take a lost one's place in this run (the plan's; "" where one can).
  void refuse_replacements(std::string why) { replacement_refusal_ = std::move(why); }
  // Every process in the run has been dropped.
  bool all_lost() const;
  // Tells every process the run is over, and how it ended (a client run by hand says so).
  void stop_all(StopOutcome outcome = StopOutcome::kCompleted, const std::string& reason = "");

  // Accounting: per-process socket bytes since `before`, in HELLO order.
  using ByteSnapshot = std::map<std::string, std::pair<uint64_t, uint64_t>>;  // sent, received
  ByteSnapshot bytes_snapshot() const;
  std::vector<ProcessRecord> per_process_bytes(
      const ByteSnapshot& before, const std::map<std::string, std::vector<uint32_t>>& tasks) const;
  std::pair<uint64_t, uint64_t> total_bytes() const;  // sent, received since the start

  int process_index(const std::string& identity) const;  // HELLO order, -1 if unknown
  // "stage 1 (pid 4242), stage 2 (pid 4243)": processes by HELLO order, as a plan calls them
  std::string ranks_named(const char* name, const std::vector<uint32_t>& ranks) const;
  // " (the connection of stage 1 (pid 4242) is closed: did its process die?)" for those of
  // `ranks` whose connection is closed, else "": which of the silent workers is gone
  std::string closed_ranks_note(const char* name, const std::vector<uint32_t>& ranks) const;
  // A kRank collect's failure for its missing workers: "round 3: no report from stage 1 (pid
  // 4242) within 10 s (did it die? the pipeline cannot go on without it{hint}){closed note}"
  std::string no_report(const char* name, const Collected& c, std::string_view whole,
                        std::string_view hint = "") const;
  bool hosts(const std::string& identity, uint32_t client) const;
  std::map<std::string, std::vector<uint32_t>> hosted() const;  // every process, its clients
  std::vector<uint32_t> all_clients() const;                    // 0 .. num_clients - 1
  std::vector<uint32_t> all_ranks() const;                      // 0 .. processes - 1 (HELLO order)
  std::vector<HostRecord> host_records() const;                 // the processes in `order`
  // The lost processes whose places newcomers took (admit_newcomers), each with its round.
  std::vector<HostRecord> replaced_records() const;
  Envelope envelope(uint32_t client = 0) const { return {client, run_id, round}; }
  // A TASK carrying the model `snapshot` as the run's downlink sends it (downlink.h).
  WireMessage encode_model_task(TaskMsg task, std::shared_ptr<const std::vector<float>> snapshot,
                                const Envelope& e) {
    return downlink_.encode(std::move(task), std::move(snapshot), e);
  }
  bool downlink_delta() const { return downlink_.delta(); }

  std::map<std::string, Peer> peers;
  std::map<uint32_t, std::string> owner;  // virtual client -> peer identity
  std::vector<std::string> order;         // processes in HELLO order (their index in metrics)
  std::set<std::string> lost;             // processes dropped (missed deadlines): no more tasks
  std::map<std::string, int> missed;      // a process's rounds missed in a row, while in the run
  uint64_t run_id = 0, round = 0;
  size_t num_clients = 0;
  std::pair<uint64_t, uint64_t> bytes_carried{0, 0};  // a resumed run's totals at its checkpoint
  // what it warned of once the processes came (for summary.json's and the README's warnings)
  std::vector<std::string> warnings;
  // fedpar launch: the run_config_hash of the job's config; a HELLO naming another is refused
  std::string launch_config;

 private:
  // Why a process that was not among the run's at its start is turned away (a late client with
  // no place to take): receive() keeps only a stranger's HELLO, so no later step meets its other
  // messages.
  std::string stranger_refusal() const;
  // Why a HELLO is refused for what it says ("" when it is not): more slots than max_slots (the
  // config grants slots), or under fedpar launch another config than the job's.
  std::string hello_refusal(const HelloMsg& h) const;
  // What the process that said `h` computes on: its --device, else the run config's.
  std::string device_of(const HelloMsg& h) const;
  // Why a parsed reply cannot be kept ("" when it can); fills r.key and r.process.
  std::string check(const CollectSpec& spec, const Collected& so_far, Reply& r) const;
  void throw_if_non_finite(const CollectSpec& spec, const Reply& r) const;
  // Whether `in` is the UPDATE of a client a round released (not waited for), come in a later
  // collect (the next round's, or a state pull's after that round): it is
  // dropped without the ERROR a late reply gets (its bytes count in the traffic, as they came).
  bool late_released(const CollectSpec& spec, const Incoming& in);
  // collect()'s watch over awaited processes whose connection closed (ZeroMQ names no peer when
  // a connection ends; the transport tells it from the socket of the peer's last message). Each
  // is sent a PING, which goes out only over a connection: one that does has reconnected (a
  // dropped connection; client processes ignore PING), one that has not for kReconnectSeconds is
  // gone (the process died, or its network did). One that reconnected is sent a PING every
  // kRecheckSeconds until its next message shows the new connection: a PING that no longer gets
  // through means that connection closed too.
  struct ClosedWatch {
    std::map<std::string, Clock::time_point> since;  // seen closed, no PING through yet
    std::map<std::string, Clock::time_point> back;   // reconnected: when a PING last got through
    Clock::time_point check_at = deadline_after(kConnectionCheckSeconds);  // the next look
  };
  static constexpr double kRecheckSeconds = 1;
  // Once w.check_at has come (every kConnectionCheckSeconds), of the `silent` processes (awaited,
  // no answer yet) those gone; each seen to have reconnected is logged with back_line(id).
  std::vector<std::string> gone(const std::set<std::string>& silent, ClosedWatch& w,
                                const std::function<std::string(const std::string&)>& back_line);
  bool ping(const std::string& id);  // whether a PING went out to `id`
  void add_peer(const Received& r, const HelloMsg& hello);
  void warn_of_another_build(const Peer& p);  // a HELLO of another build: warned and recorded
  // A process gone before the run started gives its place up (a new process may take it).
  void free_place(const std::string& id);
  // Emulated links are per process: says so when `clients`, one process's, have other profiles.
  void warn_of_shared_link(const std::vector<uint32_t>& clients);
  void deal_clients();
  // The lost process whose place a newcomer may take (HELLO order), or "" when none is.
  std::string free_place_to_take();
  void await_newcomer(const std::string& id);
  // What WELCOME told each process at the start, for a newcomer taking a place.
  struct Welcome {
    std::string config_toml;
    size_t num_params = 0;
    std::string dataset_hash;
    std::vector<std::vector<uint32_t>> shards;  // of every virtual client
  };
  WelcomeMsg welcome_for(const std::vector<uint32_t>& clients, const ClientState& state) const;
  // The samples behind client c's answer to a task of this kind and batch (the manifest's count).
  uint64_t expected_samples(uint32_t c, TaskKind kind, int64_t batch) const;

  const RunSpec& s_;
  Transport& transport_;
  bool quiet_;
  // peers whose last send failed (not connected) or whose connection closed while they were
  // awaited; a send that goes out takes a peer off
  std::set<std::string> unreachable_;
  std::set<std::pair<uint64_t, uint32_t>> released_;  // (round, client) not waited for
  bool stopping_ = false;  // stop_all: a process gone by then (stopped first) is not news
  CodecSet uplink_;        // what UPDATEs may be encoded with
  Downlink downlink_;      // how TASKs carry the model
  std::vector<uint64_t> shard_sizes_;  // n_k of every virtual client, from the manifest
  Welcome welcome_;
  struct Newcomer {
    Received msg;
    HelloMsg hello;
    Clock::time_point heard;
  };
  std::string replacement_refusal_;
  std::vector<Newcomer> newcomers_;  // HELLOs heard during the rounds, for admit_newcomers
  std::vector<std::pair<std::string, int64_t>> replaced_;  // (lost process, after round)
  HostRecord host_record(const std::string& id) const;
  LogThrottle rejections_{kLoggedRejections, kRejectionLogSeconds};  // peers' dropped messages
};

}  // namespace fedpar
