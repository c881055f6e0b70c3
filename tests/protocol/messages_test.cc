// Typed messages: each round-trips through its encode and decode, and every field a peer can get
// wrong is a reason naming it, never a crash or a silent default.
#include "protocol/messages.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

namespace fedpar {
namespace {

// Encodes, then parses the frames as a receiver would.
ParsedMessage wire(const WireMessage& m) {
  static std::vector<std::vector<uint8_t>> keep;  // the parsed views point into these
  keep = m.copy_frames();
  std::vector<std::span<const uint8_t>> spans(keep.begin(), keep.end());
  auto p = parse_message(spans);
  EXPECT_TRUE(std::holds_alternative<ParsedMessage>(p)) << std::get<ProtocolError>(p).reason;
  return std::move(std::get<ParsedMessage>(p));
}

template <typename T>
std::string reason(const Decoded<T>& d) {
  return std::holds_alternative<ProtocolError>(d) ? std::get<ProtocolError>(d).reason : "accepted";
}

TEST(Messages, TaskRoundTripsPerKind) {
  const std::vector<float> model = {1.5f, -2.f, 0.25f};
  TaskMsg t{.kind = TaskKind::kLocalTrain,
            .clients = {1, 3},
            .batch = 10,
            .steps = 5,
            .epochs = 0,
            .lr = 0.05,
            .momentum = 0.9,
            .drift = true,
            .draw = 7};
  t.vectors = {model};
  const ParsedMessage p = wire(encode(t, {0, 99, 4}));
  EXPECT_EQ(p.header.round, 4u);
  EXPECT_EQ(p.header.run, 99u);
  const TaskMsg back = std::get<TaskMsg>(decode_task(p));
  EXPECT_EQ(back.kind, TaskKind::kLocalTrain);
  EXPECT_EQ(back.clients, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(back.batch, 10);
  EXPECT_EQ(back.steps, 5);
  EXPECT_DOUBLE_EQ(back.lr, 0.05);
  EXPECT_DOUBLE_EQ(back.momentum, 0.9);
  EXPECT_TRUE(back.drift);
  EXPECT_EQ(back.draw, std::optional<uint64_t>(7));
  ASSERT_EQ(back.vectors.size(), 1u);
  EXPECT_EQ(std::vector<float>(back.vectors[0].begin(), back.vectors[0].end()), model);
  EXPECT_FALSE(back.control);

  // SCAFFOLD: the model and the server's control; a control without its vector is refused
  const std::vector<float> control = {0.5f, 0.f, -1.f};
  t.control = true;
  t.vectors = {model, control};
  const TaskMsg sc = std::get<TaskMsg>(decode_task(wire(encode(t, {}))));
  EXPECT_TRUE(sc.control);
  ASSERT_EQ(sc.vectors.size(), 2u);
  EXPECT_EQ(std::vector<float>(sc.vectors[1].begin(), sc.vectors[1].end()), control);
  t.vectors = {model};
  EXPECT_EQ(reason(decode_task(wire(encode(t, {})))),
            "a SCAFFOLD task carries the model and the control");
  t.kind = TaskKind::kGradient;
  t.vectors = {model, control};
  EXPECT_EQ(reason(decode_task(wire(encode(t, {})))), "only a local-train task carries a control");

  TaskMsg ring{.kind = TaskKind::kAllReduce,
               .batch = 0,
               .total_weight = 600,
               .hash = true,
               .send_params = false};
  const TaskMsg r = std::get<TaskMsg>(decode_task(wire(encode(ring, {}))));
  EXPECT_EQ(r.kind, TaskKind::kAllReduce);
  EXPECT_DOUBLE_EQ(r.total_weight, 600);
  EXPECT_TRUE(r.hash);
  EXPECT_FALSE(r.draw.has_value());
}

TEST(Messages, UpdateRoundTripsWithRingFields) {
  UpdateMsg u{.kind = TaskKind::kAllReduce,
              .num_samples = 250,
              .loss_sum = 12.5,
              .samples_processed = 250,
              .compute_seconds = 0.5,
              .parameter_bytes = 8,
              .activation_bytes = 16,
              .allreduce_seconds = 0.25,
              .ring_bytes_sent = 100,
              .ring_bytes_received = 90,
              .hash = "abc"};
  const UpdateMsg b = std::get<UpdateMsg>(decode_update(wire(encode(u, {2, 1, 3}))));
  EXPECT_EQ(b.kind, TaskKind::kAllReduce);
  EXPECT_EQ(b.num_samples, 250u);
  EXPECT_DOUBLE_EQ(b.loss_sum, 12.5);
  EXPECT_EQ(b.ring_bytes_received, 90u);
  EXPECT_EQ(b.hash, "abc");
  EXPECT_TRUE(b.vectors.empty());
}

// A simulated network's pipeline stage and tensor rank report their timings; the clock is told
// exactly how many of the body's bytes they took, and a peer's bad timings are named.
TEST(Messages, UpdateCarriesTheSimulatedClocksTimingsAndTheirSize) {
  UpdateMsg u{.kind = TaskKind::kPipeline, .num_samples = 4, .hash = ""};
  const size_t plain = encode(u, {0, 1, 1}).bytes();
  EXPECT_EQ(simulation_extra_bytes(u), 0u);
  u.op_seconds = {0.125, 2.5e-05};
  u.op_bytes = {4096, 0};
  u.ring_steps = 6;
  const WireMessage with = encode(u, {0, 1, 1});
  EXPECT_EQ(with.bytes() - plain, simulation_extra_bytes(u));
  const UpdateMsg b = std::get<UpdateMsg>(decode_update(wire(with)));
  EXPECT_EQ(b.op_seconds, u.op_seconds);
  EXPECT_EQ(b.op_bytes, u.op_bytes);
  EXPECT_EQ(b.ring_steps, 6u);
  u.op_bytes.pop_back();
  EXPECT_EQ(reason(decode_update(wire(encode(u, {0, 1, 1})))),
            "op_seconds and op_bytes must have one entry per op");
  u.op_bytes.push_back(0);
  u.op_seconds[1] = -1;
  EXPECT_EQ(reason(decode_update(wire(encode(u, {0, 1, 1})))),
            "op_seconds must be finite and >= 0");
}

TEST(Messages, WelcomeAndHelloAndRingRoundTrip) {
  WelcomeMsg w{"seed = 3\n", {0, 2}, {{5, 6}, {7}}, 42, "h"};
  const WelcomeMsg wb = std::get<WelcomeMsg>(decode_welcome(wire(encode(w, {}))));
  EXPECT_EQ(wb.config_toml, "seed = 3\n");
  EXPECT_EQ(wb.shards, w.shards);
  EXPECT_EQ(wb.num_params, 42u);
  // a client listed twice would get two shards' rows: refused
  EXPECT_EQ(reason(decode_welcome(
                wire(encode(WelcomeMsg{"seed = 3\n", {2, 2}, {{5}, {7}}, 42, "h"}, {})))),
            "WELCOME lists a client twice");
  EXPECT_EQ(std::get<HelloMsg>(decode_hello(wire(encode(HelloMsg{.slots = 3, .pid = 9})))).slots,
            3);
  // fedpar launch's ranks name their config and device; an older client names neither
  const auto hb = std::get<HelloMsg>(decode_hello(wire(
      encode(HelloMsg{.slots = 1, .pid = 9, .run_config = "0123456789abcdef", .device = "cuda"}))));
  EXPECT_EQ(hb.run_config, "0123456789abcdef");
  EXPECT_EQ(hb.device, "cuda");
  const auto ra = std::get<RingAssignmentMsg>(
      decode_ring_assignment(wire(encode(RingAssignmentMsg{1, 3, "tcp://x:1"}, {}))));
  EXPECT_EQ(ra.next, "tcp://x:1");
  EXPECT_EQ(ra.replicas, 1);
  EXPECT_EQ(std::get<RingEndpointMsg>(
                decode_ring_endpoint(wire(encode(RingEndpointMsg{"tcp://y:2"}, {}))))
                .endpoint,
            "tcp://y:2");
  // A [grid]'s process: its replica and where the next replica's same part listens.
  const auto grid = std::get<RingAssignmentMsg>(decode_ring_assignment(wire(encode(
      RingAssignmentMsg{.rank = 1, .size = 2, .replica = 1, .replicas = 2, .replica_next = "r"},
      {}))));
  EXPECT_EQ(grid.replica, 1);
  EXPECT_EQ(grid.replicas, 2);
  EXPECT_EQ(grid.replica_next, "r");
  const auto both = std::get<RingEndpointMsg>(
      decode_ring_endpoint(wire(encode(RingEndpointMsg{"tcp://y:2", "tcp://y:3"}, {}))));
  EXPECT_EQ(both.replica_endpoint, "tcp://y:3");
  // [security]: a worker's link key goes up, its neighbours' and the run's come down
  EXPECT_EQ(std::get<RingEndpointMsg>(
                decode_ring_endpoint(wire(encode(RingEndpointMsg{"tcp://y:2", "", "K"}, {}))))
                .key,
            "K");
  RingAssignmentMsg keyed{.rank = 0, .size = 2, .next = "n", .prev = "p"};
  keyed.next_key = "N", keyed.prev_key = "P", keyed.keys = {"N", "P"};
  const auto k = std::get<RingAssignmentMsg>(decode_ring_assignment(wire(encode(keyed, {}))));
  EXPECT_EQ(k.next_key, "N");
  EXPECT_EQ(k.prev_key, "P");
  EXPECT_EQ(k.keys, keyed.keys);
  EXPECT_EQ(
      reason(decode_ring_assignment(wire(encode_message(
          MessageType::kRing, 0, 0, 0, {{"rank", 0}, {"size", 1}, {"next", ""}, {"keys", {1}}})))),
      "field 'keys' has the wrong type");
  // a replica outside the grid is refused
  auto bad = decode_ring_assignment(wire(
      encode_message(MessageType::kRing, 0, 0, 0,
                     {{"rank", 0}, {"size", 1}, {"next", ""}, {"replica", 2}, {"replicas", 2}})));
  ASSERT_TRUE(std::holds_alternative<ProtocolError>(bad));
  EXPECT_NE(std::get<ProtocolError>(bad).reason.find("replica 2 of 2"), std::string::npos);
  // allreduce.backend = "nccl": the communicator's id comes with the rank, and only as 256 hex
  // digits (ncclCommInitRank would read whatever bytes it got)
  const std::string id(255, 'a');
  RingAssignmentMsg nccl{.rank = 1, .size = 2, .next = "n"};
  nccl.nccl_id = id + "f";
  EXPECT_EQ(std::get<RingAssignmentMsg>(decode_ring_assignment(wire(encode(nccl, {})))).nccl_id,
            nccl.nccl_id);
  for (const std::string& wrong : {id, id + "F", id + "g", id + "ff"})
    EXPECT_EQ(reason(decode_ring_assignment(wire(
                  encode_message(MessageType::kRing, 0, 0, 0,
                                 {{"rank", 0}, {"size", 1}, {"next", ""}, {"nccl_id", wrong}})))),
              "nccl_id is not 256 lowercase hex digits")
        << wrong.size();
}

// READY (a client's data is loaded) and PING (the server asks whether a process has a connection;
// clients ignore it) are their header and an empty body: the type, run and round, nothing a peer
// could get wrong, and no other message's decoder takes them.
TEST(Messages, ReadyAndPingAreAHeaderOfTheirRunAndRound) {
  for (const auto& [m, type, name] :
       {std::tuple{encode_ready({0, 42, 7}), MessageType::kReady, "READY"},
        std::tuple{encode_ping({0, 42, 7}), MessageType::kPing, "PING"}}) {
    SCOPED_TRACE(name);
    const ParsedMessage p = wire(m);
    EXPECT_EQ(p.header.type, type);
    EXPECT_STREQ(message_type_name(p.header.type), name);
    EXPECT_EQ(p.header.run, 42u);
    EXPECT_EQ(p.header.round, 7u);
    EXPECT_TRUE(p.body.empty()) << p.body.dump();
    EXPECT_NE(reason(decode_task(p)).find(fmt::format("expected TASK, got {}", name)),
              std::string::npos);
  }
}

// STOP says how the run ended and why, so a client process started by hand can say it and exit
// accordingly; an outcome a peer made up is named, not taken for "completed".
TEST(Messages, StopCarriesTheRunsOutcomeAndItsReason) {
  for (const auto outcome : {StopOutcome::kCompleted, StopOutcome::kStopped, StopOutcome::kFailed,
                             StopOutcome::kLeftOut}) {
    const ParsedMessage p = wire(encode(StopMsg{outcome, "round 3: worker 1 failed"}, {0, 42, 2}));
    EXPECT_EQ(p.header.type, MessageType::kStop);
    EXPECT_EQ(p.header.round, 2u);
    const auto d = decode_stop(p);
    ASSERT_EQ(reason(d), "accepted");
    EXPECT_EQ(std::get<StopMsg>(d).outcome, outcome) << stop_outcome_name(outcome);
    EXPECT_EQ(std::get<StopMsg>(d).reason, "round 3: worker 1 failed");
  }
  EXPECT_STREQ(stop_outcome_name(StopOutcome::kLeftOut), "left-out");
  const auto raw = [](nlohmann::json body) {
    return wire(encode_message(MessageType::kStop, 0, 0, 0, body));
  };
  EXPECT_EQ(reason(decode_stop(raw({{"outcome", "exploded"}, {"reason", ""}}))),
            "field 'outcome' names no outcome ('exploded'; expected completed, stopped, failed "
            "or left-out)");
  EXPECT_EQ(reason(decode_stop(raw({{"reason", "x"}}))), "missing field 'outcome'");
  EXPECT_EQ(reason(decode_stop(wire(encode_ping({})))), "expected STOP, got PING");
}

TEST(Messages, BadFieldsAreNamed) {
  auto raw = [](MessageType t, nlohmann::json body, std::vector<std::span<const float>> v = {}) {
    return wire(encode_message(t, 0, 0, 0, body, v));
  };
  EXPECT_EQ(reason(decode_hello(raw(MessageType::kHello, {{"slots", 0}}))),
            "slots must be between 1 and 1000000");
  EXPECT_EQ(reason(decode_hello(raw(MessageType::kHello, {{"slots", "two"}}))),
            "field 'slots' has the wrong type");
  EXPECT_EQ(reason(decode_hello(raw(MessageType::kTask, {{"slots", 1}}))),
            "expected HELLO, got TASK");
  EXPECT_EQ(reason(decode_hello(
                raw(MessageType::kHello, {{"slots", 1}, {"device", std::string(65, 'a')}}))),
            "device must be at most 64 characters");
  EXPECT_EQ(reason(decode_hello(
                raw(MessageType::kHello, {{"slots", 1}, {"run_config", std::string(65, 'a')}}))),
            "run_config must be at most 64 characters");
  EXPECT_NE(reason(decode_task(raw(MessageType::kTask,
                                   {{"kind", "sideways"}, {"clients", {0}}, {"batch", 0}})))
                .find("names no task kind ('sideways'"),
            std::string::npos);
  // A training task without its model, a backward task without one dlogits per client.
  EXPECT_EQ(reason(decode_task(raw(MessageType::kTask, {{"kind", "gradient"},
                                                        {"clients", {0}},
                                                        {"batch", 0},
                                                        {"steps", 1},
                                                        {"epochs", 0},
                                                        {"lr", 0.1},
                                                        {"momentum", 0},
                                                        {"drift", false}}))),
            "a training task carries the model");
  const std::vector<float> one = {1};
  EXPECT_EQ(
      reason(decode_task(raw(MessageType::kTask,
                             {{"kind", "backward"}, {"clients", {0, 1}}, {"batch", 0}}, {one}))),
      "a backward task carries one dlogits vector per client");
  EXPECT_EQ(
      reason(decode_update(raw(MessageType::kUpdate, {{"kind", "gradient"}, {"num_samples", 5}}))),
      "missing field 'loss_sum'");
  // JSON has no NaN: a non-finite loss arrives as null and decodes to NaN (the server then ends
  // the run as diverged), where a string is still the wrong type
  nlohmann::json body = {{"kind", "gradient"},     {"num_samples", 5},       {"loss_sum", nullptr},
                         {"samples_processed", 5}, {"compute_seconds", 0.0}, {"parameter_bytes", 0},
                         {"activation_bytes", 0}};
  const auto nan_loss = decode_update(raw(MessageType::kUpdate, body));
  ASSERT_EQ(reason(nan_loss), "accepted");
  EXPECT_TRUE(std::isnan(std::get<UpdateMsg>(nan_loss).loss_sum));
  body["loss_sum"] = "x";
  EXPECT_EQ(reason(decode_update(raw(MessageType::kUpdate, body))),
            "field 'loss_sum' has the wrong type");
  EXPECT_EQ(reason(decode_welcome(raw(MessageType::kWelcome, {{"config", ""},
                                                              {"clients", {0, 1}},
                                                              {"num_params", 1},
                                                              {"dataset_hash", ""},
                                                              {"shards", {{1}}}}))),
            "WELCOME needs 'shards': one list of sample indices per client");
  EXPECT_EQ(reason(decode_ring_assignment(
                raw(MessageType::kRing, {{"rank", 3}, {"size", 3}, {"next", "x"}}))),
            "rank 3 of a ring of 3");
}

}  // namespace
}  // namespace fedpar
