// link_probe: one timed ZeroMQ transfer through fedpar's transport, for the kernel check
// (tbf_check_test.cc). The receiver binds, waits for the sender's HELLO, sends GO and times how
// long the sender's payload takes to be handed to it; with UP_BPS it receives through the emulated
// uplink (transport/shaped_link.h) of that bandwidth.
//   link_probe receive ENDPOINT BYTES [UP_BPS]   prints "seconds S bytes B"
//   link_probe send ENDPOINT BYTES
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "protocol/frames.h"
#include "transport/shaped_link.h"

namespace fedpar {
namespace {

WireMessage control(MessageType type) { return encode_message(type, 0, 1, 0, {}); }

int receive(const std::string& endpoint, size_t bytes, double up_bps) {
  std::unique_ptr<Transport> t = bind_zmq_transport(endpoint);
  if (up_bps > 0) {
    const LinkProfile link{.down_bps = 1e12, .up_bps = up_bps};
    t = shape_transport(
        std::move(t),
        resolve_network(NetworkMode::kEmulated, JitterKind::kUniform, "custom", "", {}, link, 1, 1),
        1);
  }
  const auto hello = t->receive(deadline_after(30));
  if (!hello) throw std::runtime_error("no HELLO within 30 s");
  t->assign(hello->peer, {0});  // shaped (when emulated) from here on
  const auto t0 = Clock::now();
  t->send(hello->peer, control(MessageType::kTask));
  const auto payload = t->receive(deadline_after(120));
  const double seconds = seconds_since(t0);
  if (!payload) throw std::runtime_error("no payload within 120 s");
  if (payload->bytes() < bytes)
    throw std::runtime_error(fmt::format("got {} bytes, expected {}", payload->bytes(), bytes));
  t->send(hello->peer, control(MessageType::kStop));
  fmt::print("seconds {:.6f} bytes {}\n", seconds, payload->bytes());
  return 0;
}

int send(const std::string& endpoint, size_t bytes) {
  const auto c = connect_zmq_channel(endpoint);
  c->send(control(MessageType::kHello));
  if (!c->receive(deadline_after(30))) throw std::runtime_error("no GO within 30 s");
  auto data = std::make_shared<std::vector<float>>(bytes / sizeof(float), 0.5f);
  const std::vector<std::span<const float>> vecs = {*data};
  c->send(encode_message(MessageType::kUpdate, 0, 1, 0, {}, vecs, data));
  // the channel drops unsent data on close: wait until the receiver has it all
  if (!c->receive(deadline_after(120))) throw std::runtime_error("no STOP within 120 s");
  return 0;
}

}  // namespace
}  // namespace fedpar

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() >= 3 && a[0] == "receive")
      return fedpar::receive(a[1], std::stoull(a[2]), a.size() > 3 ? std::stod(a[3]) : 0);
    if (a.size() == 3 && a[0] == "send") return fedpar::send(a[1], std::stoull(a[2]));
  } catch (const std::exception& e) {
    fmt::print(stderr, "link_probe: {}\n", e.what());
    return 1;
  }
  fmt::print(stderr, "usage: link_probe receive ENDPOINT BYTES [UP_BPS] | send ENDPOINT BYTES\n");
  return 2;
}
