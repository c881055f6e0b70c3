// Fuzzes the wire header (protocol/header.h): any frames decode to a header or a ProtocolError,
// and a header that decodes encodes back to the same 48 bytes.
#include <cstring>

#include "fuzz/fuzz_input.h"
#include "protocol/header.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto frames = fuzz::split_frames({data, size});
  const auto views = fuzz::spans(frames);
  const auto decoded = decode_message(views);
  if (const auto* e = std::get_if<ProtocolError>(&decoded)) fuzz::refused(e->reason);
  if (const Header* h = std::get_if<Header>(&decoded)) {
    const HeaderBytes again = encode_header(*h);
    if (frames[0].size() != again.size() ||
        std::memcmp(frames[0].data(), again.data(), again.size()) != 0)
      __builtin_trap();  // the decoder accepted bytes it would not write
  }
  return 0;
}

std::vector<std::string> fedpar_fuzz_seeds() {
  std::vector<std::string> seeds;
  const std::vector<uint8_t> body = {'{', '}'};
  const std::vector<uint8_t> floats(16, 0);
  for (auto type : {MessageType::kHello, MessageType::kUpdate, MessageType::kRing}) {
    std::vector<std::span<const uint8_t>> payload = {body, floats};
    const HeaderBytes h = encode_header(make_header(type, 3, 7, 11, payload));
    seeds.push_back(fuzz::join_frames({{h.begin(), h.end()}, body, floats}));
  }
  seeds.push_back(fuzz::join_frames({std::vector<uint8_t>(kHeaderBytes, 0)}));
  return seeds;
}
