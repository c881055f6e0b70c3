// Fuzzes what a peer's bytes go through after the header: the body's size limit and JSON parse,
// the vector frames (raw, or decoded by each codec), and every typed decoder. The harness writes a
// valid header over the fuzzed payload, so the fuzzer explores bodies and vectors, not the CRC.
// Input: [type][codec][flags: 1 require finite, 2 sizes expected][u16 floats] then frames.
#include <cstring>

#include "fuzz/fuzz_input.h"
#include "protocol/frames.h"
#include "protocol/messages.h"

using namespace fedpar;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {{8, 16}, {16}};  // PowerSGD's tensors

const CodecSet& every_codec() {
  static const CodecSet set = [] {
    CodecSet s;
    CodecParams p;
    p.shapes = kShapes;
    p.bucket = 64;
    for (const auto& name : codec_names()) s.add(make_codec(name, p));
    return s;
  }();
  return set;
}

// Each decoder must answer any parsed body with a value or a ProtocolError, never throw.
// The decoder of the message's own type reports its refusal.
void decode_all(const ParsedMessage& p) {
  auto run = [&](MessageType type, const auto& decoded) {
    if (const auto* e = std::get_if<ProtocolError>(&decoded); e && type == p.header.type)
      fuzz::refused(e->reason);
  };
  run(MessageType::kHello, decode_hello(p));
  run(MessageType::kWelcome, decode_welcome(p));
  run(MessageType::kRing, decode_ring_endpoint(p));
  run(MessageType::kRing, decode_ring_assignment(p));
  run(MessageType::kTask, decode_task(p));
  run(MessageType::kUpdate, decode_update(p));
  run(MessageType::kError, decode_error(p));
  run(MessageType::kStop, decode_stop(p));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const auto type = MessageType(1 + data[0] % 8);  // HELLO .. READY
  const auto codec = CodecId(data[1] % kCodecIdCount);
  const bool finite = data[2] & 1, expected = data[2] & 2;
  uint16_t floats = 0;
  std::memcpy(&floats, data + 3, 2);
  floats %= 4097;
  auto frames = fuzz::split_frames({data + 5, size - 5});
  const auto payload = fuzz::spans(frames);
  const HeaderBytes head = encode_header(make_header(type, 1, 2, 3, payload, codec));
  frames.insert(frames.begin(), std::vector<uint8_t>(head.begin(), head.end()));
  const std::vector<size_t> sizes(expected && frames.size() > 2 ? frames.size() - 2 : 0, floats);
  const auto parsed =
      parse_message(fuzz::spans(frames), sizes, finite, &every_codec(), expected ? 0 : floats);
  if (const auto* e = std::get_if<ProtocolError>(&parsed)) fuzz::refused(e->reason);
  if (const auto* p = std::get_if<ParsedMessage>(&parsed)) {
    if (!sizes.empty() && p->vectors.size() != sizes.size()) __builtin_trap();
    for (size_t i = 0; i < p->vectors.size() && !sizes.empty(); ++i)
      if (p->vectors[i].size() != sizes[i]) __builtin_trap();  // a decoded size nobody asked for
    decode_all(*p);
  }
  return 0;
}

std::vector<std::string> fedpar_fuzz_seeds() {
  std::vector<std::string> seeds;
  const std::vector<float> model(144, 0.25f), small = {1.0f, -2.0f, 3.0f};
  auto add = [&](const WireMessage& m, uint8_t flags, uint16_t floats) {
    const auto all = m.spans();
    std::vector<std::vector<uint8_t>> payload;
    for (size_t i = 1; i < all.size(); ++i) payload.emplace_back(all[i].begin(), all[i].end());
    Header h = std::get<Header>(decode_message(all));
    std::string s = {char(uint16_t(h.type) - 1), char(h.codec), char(flags), char(floats & 0xff),
                     char(floats >> 8)};
    seeds.push_back(s + fuzz::join_frames(payload));
  };
  const Envelope e{.client = 1, .run = 2, .round = 3};
  add(encode(HelloMsg{.slots = 2, .pid = 77}), 0, 0);
  add(encode(HelloMsg{.slots = 1, .pid = 78, .run_config = "0123456789abcdef", .device = "cuda"}),
      0, 0);
  const std::vector<float> control(3, 0.5f);
  add(encode(WelcomeMsg{.config_toml = "rounds = 3\n[partition]\nclients = 2\n",
                        .clients = {0, 1},
                        .shards = {{0, 2, 4}, {1, 3}},
                        .num_params = 3,
                        .dataset_hash = "0123456789abcdef",
                        .control_clients = {1},
                        .controls = {control}},
             e),
      3, 3);
  add(encode(RingEndpointMsg{.endpoint = "tcp://127.0.0.1:5555"}, e), 0, 0);
  add(encode(RingAssignmentMsg{.rank = 1, .size = 2, .next = "tcp://127.0.0.1:5556"}, e), 0, 0);
  add(encode(
          TaskMsg{.kind = TaskKind::kLocalTrain, .clients = {0}, .batch = 10, .vectors = {small}},
          e),
      3, 3);
  add(encode(UpdateMsg{.num_samples = 10, .loss_sum = 2.5, .vectors = {small}}, e), 3, 3);
  add(encode(ErrorMsg{.reason = "no"}, e), 0, 0);
  add(encode(StopMsg{.outcome = StopOutcome::kFailed, .reason = "a ring failed"}, e), 0, 0);
  CodecParams p;
  p.shapes = kShapes;
  p.bucket = 64;
  for (const auto& name : codec_names()) {  // an UPDATE encoded with every codec
    const auto codec = make_codec(name, p);
    if (!codec) continue;
    const std::span<const float> v = model;
    add(encode(UpdateMsg{.num_samples = 10,
                         .encoded = encode_vectors(*codec, {&v, 1}, {.round = 3, .client = 1})},
               e),
        3, uint16_t(model.size()));
  }
  return seeds;
}
