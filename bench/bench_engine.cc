// The round engine's overhead: a gradient round through fedpar's Engine (TASK out, N UPDATEs
// parsed, checked, averaged) against a raw ZeroMQ ROUTER/DEALER scatter/gather of the same bytes,
// round by round over N forked workers that compute nothing. Exits 1 unless engine median <= 1.5x
// raw median. Usage: bench_engine [--workers 2,4,8] [--floats 199210] [--rounds 200] [--warmup 20]
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/pipe_lines.h"
#include "core/check.h"
#include "core/median.h"
#include "protocol/messages.h"
#include "server/engine.h"
#include "server/strategy.h"
#include "transport/transport.h"

namespace fedpar {
namespace {

constexpr double kGoal = 1.5;  // the engine's median round within this factor of raw
constexpr float kLr = 0.01f;   // the SGD step both sides take
constexpr double kWaitSeconds = 60;

using Floats = std::shared_ptr<const std::vector<float>>;

// A message `f` views, handed to ZeroMQ without a copy; the snapshot lives until ZeroMQ frees it.
zmq::message_t zero_copy(const Floats& f) {
  auto* hold = new Floats(f);
  return zmq::message_t(
      const_cast<float*>(f->data()), f->size() * sizeof(float),
      [](void*, void* h) { delete static_cast<Floats*>(h); }, hold);
}

// Worker, engine side: parses the next message as a fedpar client does; answers a TASK with one
// precomputed UPDATE per hosted client it lists. False on STOP.
bool serve_engine(Channel& ch, const std::vector<uint32_t>& mine, const UpdateMsg& u,
                  const Floats& grad) {
  auto msg = ch.receive(deadline_after(kWaitSeconds));
  FEDPAR_CHECK(msg) << "the server went silent";
  auto parsed = parse_message(msg->spans());
  FEDPAR_CHECK(parsed.index() == 0) << std::get<ProtocolError>(parsed).reason;
  const ParsedMessage& m = std::get<ParsedMessage>(parsed);
  if (m.header.type == MessageType::kStop) return false;
  auto task = decode_task(m);
  FEDPAR_CHECK(task.index() == 0) << "bad TASK: " << std::get<ProtocolError>(task).reason;
  for (uint32_t c : std::get<TaskMsg>(task).clients)
    if (std::find(mine.begin(), mine.end(), c) != mine.end())
      ch.send(encode(u, {c, m.header.run, m.header.round}, grad));
  return true;
}

// Worker, raw side: one message in, the precomputed vector out.
void serve_raw(zmq::socket_t& sock, const Floats& grad) {
  zmq::message_t in;
  FEDPAR_CHECK(sock.recv(in)) << "the raw server went silent";
  sock.send(zero_copy(grad), zmq::send_flags::none);
}

// One worker process: HELLO/WELCOME with the engine, "ready" to the raw router, then `pairs`
// pairs of rounds (engine first in even pairs, raw first in odd ones), then STOP.
int worker(int from_parent, size_t floats, int pairs) {
  const std::string engine_ep = read_line(from_parent), raw_ep = read_line(from_parent);
  zmq::context_t ctx;
  auto ch = connect_zmq_channel(engine_ep, &ctx);
  ch->send(encode(HelloMsg{.slots = 1, .pid = ::getpid()}));
  auto first = ch->receive(deadline_after(kWaitSeconds));
  FEDPAR_CHECK(first) << "no WELCOME";
  auto parsed = parse_message(first->spans());
  FEDPAR_CHECK(parsed.index() == 0) << std::get<ProtocolError>(parsed).reason;
  auto welcome = decode_welcome(std::get<ParsedMessage>(parsed));
  FEDPAR_CHECK(welcome.index() == 0) << "bad WELCOME";
  const std::vector<uint32_t> mine = std::get<WelcomeMsg>(welcome).clients;

  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.set(zmq::sockopt::rcvtimeo, int(kWaitSeconds * 1000));
  raw.connect(raw_ep);
  raw.send(zmq::str_buffer("ready"), zmq::send_flags::none);

  const Floats grad = std::make_shared<const std::vector<float>>(floats, 1e-3f);
  UpdateMsg u{.kind = TaskKind::kGradient, .num_samples = 1};
  u.vectors = {*grad};
  for (int k = 0; k < pairs; ++k) {
    if (k % 2) serve_raw(raw, grad);
    FEDPAR_CHECK(serve_engine(*ch, mine, u, grad)) << "STOP before the last round";
    if (k % 2 == 0) serve_raw(raw, grad);
  }
  FEDPAR_CHECK(!serve_engine(*ch, mine, u, grad)) << "a TASK after the last round";
  return 0;
}

// Forks n workers; each gets its pipe's read end, the parent keeps the write ends (returned).
std::vector<int> spawn_workers(int n, size_t floats, int pairs, std::vector<pid_t>& pids) {
  std::fflush(stdout);
  std::vector<int> to_workers;
  for (int r = 0; r < n; ++r) {
    int p[2];
    FEDPAR_CHECK(::pipe(p) == 0) << "pipe";
    const pid_t pid = ::fork();
    FEDPAR_CHECK(pid >= 0) << "fork";
    if (pid == 0) {
      ::close(p[1]);
      try {
        ::_exit(worker(p[0], floats, pairs));
      } catch (const std::exception& e) {
        fmt::print(stderr, "bench_engine: worker {}: {}\n", r, e.what());
        ::_exit(1);
      }
    }
    ::close(p[0]);
    to_workers.push_back(p[1]);
    pids.push_back(pid);
  }
  return to_workers;
}

// One TASK to every process, N UPDATEs collected and checked, reduced into params: the path of
// server/sync_plan.cc's gradient round without the compute.
double engine_round(Engine& engine, Strategy& strategy, std::vector<float>& params,
                    const CollectSpec& spec) {
  const auto t0 = Clock::now();
  TaskMsg task{.kind = TaskKind::kGradient, .clients = spec.expected};
  const Floats snapshot = std::make_shared<const std::vector<float>>(params);
  task.vectors = {*snapshot};
  engine.send_all(encode(task, engine.envelope(), snapshot));
  const Collected c = engine.collect(spec);
  FEDPAR_CHECK(c.got.size() == spec.expected.size())
      << "engine round: " << c.missing.size() << " missing";
  std::vector<ClientUpdate> updates;
  for (const auto& [client, r] : c.got)
    updates.push_back({client, engine.round, r.update.num_samples, r.update.vectors[0]});
  strategy.apply(updates, params);
  return seconds_since(t0);
}

// The same bytes with no framing, CRC, JSON or checks: params out, N vectors summed into `sum`
// (kept across rounds, as the engine's strategy keeps its mean), params -= lr * sum / N.
double raw_round(zmq::socket_t& router, const std::vector<std::string>& ids,
                 std::vector<float>& params, std::vector<float>& sum) {
  const auto t0 = Clock::now();
  const Floats snapshot = std::make_shared<const std::vector<float>>(params);
  for (const auto& id : ids) {
    router.send(zmq::buffer(id), zmq::send_flags::sndmore);
    router.send(zero_copy(snapshot), zmq::send_flags::none);
  }
  sum.assign(params.size(), 0.0f);
  for (size_t k = 0; k < ids.size(); ++k) {
    zmq::message_t id, body;
    FEDPAR_CHECK(router.recv(id) && router.recv(body)) << "raw round: a worker went silent";
    FEDPAR_CHECK(body.size() == sum.size() * sizeof(float))
        << "raw reply of " << body.size() << " bytes";
    const auto* p = static_cast<const uint8_t*>(body.data());
    for (size_t i = 0; i < sum.size(); ++i) {
      float g;
      std::memcpy(&g, p + i * sizeof(float), sizeof(float));
      sum[i] += g;
    }
  }
  const float scale = kLr / float(ids.size());
  for (size_t i = 0; i < params.size(); ++i) params[i] -= scale * sum[i];
  return seconds_since(t0);
}

struct Times {
  std::vector<double> raw, engine;
};

// N clients with a few sample indices each, one per process.
Manifest small_manifest(int n) {
  Manifest m{.scheme = "bench", .dataset_hash = "bench"};
  for (uint32_t c = 0; c < uint32_t(n); ++c)
    m.clients.push_back({.id = c, .indices = {3 * c, 3 * c + 1, 3 * c + 2}});
  return m;
}

// The raw router learns the workers' identities from their "ready".
std::vector<std::string> raw_identities(zmq::socket_t& router, int n) {
  std::vector<std::string> ids;
  for (int k = 0; k < n; ++k) {
    zmq::message_t id, body;
    FEDPAR_CHECK(router.recv(id) && router.recv(body)) << "a worker never reached the raw router";
    ids.push_back(id.to_string());
  }
  return ids;
}

// Both servers up, the workers connected, then warm-up and timed rounds, engine and raw
// alternately.
Times measure(int n, size_t floats, int rounds, int warmup, const std::vector<int>& to_workers) {
  RunSpec s;
  s.processes = n;
  s.wait_seconds = kWaitSeconds;
  const auto transport = bind_zmq_transport("tcp://127.0.0.1:*");
  Engine engine(s, *transport, /*quiet=*/true);
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::rcvtimeo, int(kWaitSeconds * 1000));
  router.bind("tcp://127.0.0.1:*");
  for (int fd : to_workers)
    write_line(fd, engine.endpoint() + "\n" + router.get(zmq::sockopt::last_endpoint));
  engine.welcome_clients(small_manifest(n), floats, "");
  const auto ids = raw_identities(router, n);

  const auto strategy = make_gradient_averaging(s.weighting, LrSchedule{.base_lr = kLr}, {});
  CollectSpec spec{.kind = TaskKind::kGradient, .seconds = kWaitSeconds, .floats = {floats}};
  for (uint32_t c = 0; c < uint32_t(n); ++c) spec.expected.push_back(c);
  std::vector<float> params(floats, 0.5f), sum;
  Times t;
  for (int r = -warmup; r < rounds; ++r) {
    engine.round = uint64_t(r + warmup);
    const bool raw_first = (r + warmup) % 2;
    const double raw0 = raw_first ? raw_round(router, ids, params, sum) : 0;
    const double e = engine_round(engine, *strategy, params, spec);
    const double raw = raw_first ? raw0 : raw_round(router, ids, params, sum);
    if (r >= 0) t.engine.push_back(e), t.raw.push_back(raw);
  }
  engine.stop_all();
  return t;
}

double p90(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(std::ceil(0.9 * double(v.size()))) - 1)];
}

// One row of the table; true when the engine is within kGoal of raw.
bool run_config(int n, size_t floats, int rounds, int warmup) {
  std::vector<pid_t> pids;
  const std::vector<int> to_workers = spawn_workers(n, floats, warmup + rounds, pids);
  const Times t = measure(n, floats, rounds, warmup, to_workers);
  for (int fd : to_workers) ::close(fd);
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    FEDPAR_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a worker failed";
  }
  const double raw = median(t.raw), eng = median(t.engine);
  fmt::print("{:>7} {:>8} {:>12.3f} {:>15.3f} {:>7.2f} {:>11.3f} {:>14.3f}\n", n, floats, raw * 1e3,
             eng * 1e3, eng / raw, p90(t.raw) * 1e3, p90(t.engine) * 1e3);
  std::fflush(stdout);
  return eng <= kGoal * raw;
}

}  // namespace
}  // namespace fedpar

int main(int argc, char** argv) {
  using namespace fedpar;
  CLI::App app{
      "fedpar round engine vs raw ZeroMQ scatter/gather (worker processes over TCP loopback)"};
  std::vector<int> workers = {4};
  size_t floats = 199210;  // the 2NN's parameters
  int rounds = 200, warmup = 20;
  app.add_option("--workers", workers, "worker process counts")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  app.add_option("--floats", floats, "model size in floats")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 28));
  app.add_option("--rounds", rounds, "timed rounds per side")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed rounds first")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);
  fmt::print("{:>7} {:>8} {:>12} {:>15} {:>7} {:>11} {:>14}\n", "workers", "floats", "raw med ms",
             "engine med ms", "ratio", "raw p90 ms", "engine p90 ms");
  bool ok = true;
  try {
    for (int n : workers) ok = run_config(n, floats, rounds, warmup) && ok;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_engine: {}\n", e.what());
    return 2;
  }
  fmt::print("engine within {}x of raw: {}\n", kGoal, ok ? "yes" : "NO");
  return ok ? 0 : 1;
}
