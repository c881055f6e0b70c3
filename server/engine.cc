// Engine; see engine.h.
#include "server/engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/build_info.h"
#include "core/check.h"
#include "core/stop_signal.h"

namespace fedpar {

Engine::Engine(const RunSpec& s, Transport& t, bool quiet, const ParamLayout& layout)
    : s_(s), transport_(t), quiet_(quiet), downlink_(s.compression, layout) {
  uplink_.add(make_codec(s.compression.uplink, with_layout(s.compression.params, layout)));
}

std::optional<Incoming> Engine::receive(Clock::time_point deadline,
                                        std::span<const size_t> floats) {
  while (auto r = transport_.receive(deadline)) {
    const auto it = peers.find(r->peer);
    if (it != peers.end()) {
      it->second.bytes_received += r->bytes();
      it->second.last_heard = Clock::now();
    } else if (int(order.size()) >= s_.processes) {  // every process is in: a latecomer
      // a HELLO may take a lost process's place, between rounds (admit_newcomers): one per peer,
      // and a few peers, are kept; a flood is not
      auto parsed = parse_message(r->spans(), {}, /*require_finite=*/false, &uplink_);
      auto* m = std::get_if<ParsedMessage>(&parsed);
      if (m && m->header.type == MessageType::kHello && replacement_refusal_.empty()) {
        auto hello = decode_hello(*m);
        auto* h = std::get_if<HelloMsg>(&hello);
        const auto same = std::find_if(newcomers_.begin(), newcomers_.end(),
                                       [&](const Newcomer& n) { return n.msg.peer == r->peer; });
        if (const std::string why = h ? hello_refusal(*h) : ""; !why.empty()) {
          reject(*r, why, kRefusedNewcomer);
          continue;
        }
        if (h && (same != newcomers_.end() || int(newcomers_.size()) < s_.processes)) {
          if (same != newcomers_.end()) newcomers_.erase(same);
          newcomers_.push_back({std::move(*r), *h, Clock::now()});
          continue;
        }
      }
      const bool hello = m && m->header.type == MessageType::kHello;
      reject(*r, stranger_refusal(), hello ? kRefusedNewcomer : kDroppedMessage);
      continue;
    }
    // `floats` are an UPDATE's vectors: a control message (a late READY) carries none
    const auto spans = r->spans();
    const auto peek = spans.empty() ? std::nullopt : peek_header(spans[0]);
    const bool update = peek && peek->type == MessageType::kUpdate;
    auto parsed = parse_message(spans, update ? floats : std::span<const size_t>{},
                                /*require_finite=*/false, &uplink_);
    if (auto* e = std::get_if<ProtocolError>(&parsed)) {
      reject(*r, e->reason);
      continue;
    }
    return Incoming{std::move(*r), std::move(std::get<ParsedMessage>(parsed))};
  }
  return std::nullopt;
}

bool Engine::send(const std::string& peer, const WireMessage& m) {
  const auto it = peers.find(peer);
  try {
    const size_t bytes = transport_.send(peer, m);
    if (it != peers.end()) it->second.bytes_sent += bytes, unreachable_.erase(peer);
    return true;
  } catch (const PeerUnreachable& e) {
    // a process gone while the run stops (fedpar run signals every process at once, so a
    // round's send may meet a client stopped before the server saw its own signal) is not news
    if (it != peers.end() && unreachable_.insert(peer).second && !stopping_ && !stop_requested())
      log(
          fmt::format("the process of virtual clients {} cannot be reached ({}): what is sent to "
                      "it is lost until it can",
                      fmt::join(it->second.clients, ", "), e.what()));
    return false;
  }
}

void Engine::drop(const std::string& id, const std::string& why) {
  if (!lost.insert(id).second) return;
  missed.erase(id);
  log(fmt::format("the process of virtual clients {} {}; it gets no more tasks in this run",
                  fmt::join(peers.at(id).clients, ", "), why));
  // told now, so it exits saying why instead of idling until the run's end (if it can be reached)
  send(id, encode(StopMsg{StopOutcome::kLeftOut,
                          fmt::format("this process {}; the run goes on without it", why)},
                  envelope()));
}

void Engine::send_all(const WireMessage& m) {
  for (const auto& id : order)
    if (!lost.count(id)) send(id, m);
}

void Engine::reject(const Received& r, const std::string& reason, const char* what) {
  send(r.peer, encode(ErrorMsg{reason}, envelope()));
  if (!peers.count(r.peer)) transport_.forget(r.peer);  // not one of the run's processes
  std::string line = rejections_.next(  // a flood of bad messages must not flood the log
      std::string(what) + ": " + reason, [&](uint64_t more, uint64_t all) {
        return fmt::format("dropped {} more message(s) from peers ({} in all); the last: {}", more,
                           all, reason);
      });
  if (!line.empty()) log(line);
  if (rejections_.all() == kLoggedRejections)
    log(fmt::format("further dropped messages are counted, one line per {} s",
                    kRejectionLogSeconds));
}

void Engine::log(const std::string& line) const {
  if (!quiet_) fmt::print(stderr, "server: {}\n", line);
}

void Engine::count_misses(std::span<const uint32_t> asked, std::span<const uint32_t> absent,
                          int limit, bool any_absent) {
  std::map<std::string, size_t> asked_of, absent_of;  // clients, by process
  for (uint32_t c : asked) ++asked_of[owner.at(c)];
  for (uint32_t c : absent)
    if (asked_of.count(owner.at(c))) ++absent_of[owner.at(c)];
  std::vector<std::string> missing;
  for (const auto& [id, n] : asked_of) {
    const auto it = absent_of.find(id);
    const size_t gone = it == absent_of.end() ? 0 : it->second;
    if (any_absent ? gone > 0 : gone == n)
      missing.push_back(id);
    else
      missed.erase(id);
  }
  for (const auto& id : missing) {
    const int n = ++missed[id];
    if (n >= limit) {
      drop(id, fmt::format("missed {} round(s) in a row", n));
      continue;
    }
    log(
        fmt::format("the process of virtual clients {} missed {} round(s) in a row; at {} it "
                    "gets no more tasks",
                    fmt::join(peers.at(id).clients, ", "), n, limit));
  }
}

void Engine::stop_all(StopOutcome outcome, const std::string& reason) {
  for (Newcomer& n : newcomers_)  // HELLOs that came after the last round began
    if (!peers.count(n.msg.peer)) reject(n.msg, "the run is over", kRefusedNewcomer);
  newcomers_.clear();
  stopping_ = true;
  for (const auto& [id, p] : peers)  // those dropped were told then (again: unreachable then?)
    send(id, lost.count(id)
                 ? encode(StopMsg{StopOutcome::kLeftOut, "the run went on without this process"},
                          envelope())
                 : encode(StopMsg{outcome, reason}, envelope()));
}

void Engine::welcome_clients(const Manifest& manifest, size_t num_params,
                             const std::string& config_toml, const ClientState& state) {
  num_clients = manifest.clients.size();
  for (const auto& c : manifest.clients) shard_sizes_.push_back(c.indices.size());
  log(fmt::format("listening on {}; waiting for {} client process(es)", endpoint(), s_.processes));
  const auto deadline = deadline_after(s_.start_wait_seconds);
  ClosedWatch closed;
  while (int(peers.size()) < s_.processes) {
    auto in = receive(std::min(deadline, closed.check_at));
    if (!in && Clock::now() < deadline) {  // a process that left before the run frees its place
      for (const std::string& id :
           gone(std::set<std::string>(order.begin(), order.end()), closed, [&](const auto& id) {
             return fmt::format(
                 "the client process with pid {} lost its connection before the "
                 "run started and reconnected: it keeps its place",
                 peers.at(id).pid);
           }))
        free_place(id);
      continue;
    }
    if (!in) {
      // a wildcard address is where the server listens, not one a client can reach
      std::string reach = endpoint();
      for (const std::string any : {"tcp://0.0.0.0:", "tcp://*:", "tcp://[::]:"})
        if (reach.starts_with(any)) reach = "tcp://SERVER_HOST:" + reach.substr(any.size());
      throw RunFailed(fmt::format(
          "only {} of {} client processes said HELLO within {} s (start_wait_seconds; start them "
          "with: fedpar client --server {}{})",
          peers.size(), s_.processes, s_.start_wait_seconds, reach,
          s_.security.on() ? " --key NAME.key --server-key SERVER.pub" : ""));
    }
    auto hello = decode_hello(in->parsed);
    if (auto* e = std::get_if<ProtocolError>(&hello)) {
      reject(in->msg, in->parsed.header.type == MessageType::kHello
                          ? e->reason
                          : "expected HELLO before the run starts, got " +
                                std::string(message_type_name(in->parsed.header.type)));
      continue;
    }
    const auto& h = std::get<HelloMsg>(hello);
    if (const std::string why = hello_refusal(h); !why.empty()) {
      reject(in->msg, why);
      continue;
    }
    if (!peers.count(in->msg.peer)) add_peer(in->msg, h);  // else a repeated HELLO
  }
  deal_clients();
  welcome_ = {config_toml, num_params, manifest.dataset_hash, {}};
  for (const auto& c : manifest.clients) welcome_.shards.push_back(c.indices);
  for (const auto& id : order) {
    transport_.assign(id, peers[id].clients);  // [network] emulated: its uplink is shaped now
    warn_of_shared_link(peers[id].clients);
    send(id, encode(welcome_for(peers[id].clients, state), envelope()));
  }
}

WelcomeMsg Engine::welcome_for(const std::vector<uint32_t>& clients,
                               const ClientState& state) const {
  WelcomeMsg w{welcome_.config_toml, clients, {}, welcome_.num_params, welcome_.dataset_hash};
  for (uint32_t c : clients) {
    w.shards.push_back(welcome_.shards.at(c));
    if (const auto it = state.controls.find(c); it != state.controls.end()) {
      w.control_clients.push_back(c);
      w.controls.emplace_back(it->second);
    }
    if (const auto it = state.residuals.find(c); it != state.residuals.end()) {
      w.residual_clients.push_back(c);
      w.residuals.emplace_back(it->second.e);
      w.residual_lrs.push_back(it->second.lr);
    }
  }
  return w;
}

std::string Engine::free_place_to_take() {
  for (const auto& id : order)  // a closed connection a PING cannot get through is a lost process
    if (lost.count(id) || (!transport_.connected(id) && !ping(id))) return id;
  return "";
}

bool Engine::all_lost() const {
  return std::all_of(order.begin(), order.end(), [&](const auto& id) { return lost.count(id); });
}

void Engine::admit_newcomers(const std::function<ClientState()>& state) {
  std::vector<Newcomer> arrived = std::move(newcomers_);
  newcomers_.clear();
  // a process that missed the last round may be dying (a host gone without closing its
  // connections is dropped only after its misses): a newcomer waits for its place that long
  const double patience = double(s_.drop_after_missed_rounds + 1) * s_.real_wait_seconds();
  for (Newcomer& n : arrived) {
    if (peers.count(n.msg.peer)) continue;  // a repeated HELLO of one already admitted
    const std::string place = free_place_to_take();
    if (place.empty()) {
      if (!missed.empty() && seconds_since(n.heard) < patience)
        newcomers_.push_back(std::move(n));
      else
        reject(n.msg, stranger_refusal(), kRefusedNewcomer);
      continue;
    }
    // the lost process keeps its bytes in the totals; its late messages are refused as a
    // dropped one's, and the newcomer takes its index, its clients and their tasks
    drop(place, "was replaced by a process started during the run");
    replaced_.emplace_back(place, int64_t(round));
    const Peer& old = peers.at(place);
    Peer p{.identity = n.msg.peer,
           .slots = n.hello.slots,
           .pid = n.hello.pid,
           .device = device_of(n.hello),
           .build = n.hello.build,
           .machine = n.hello.machine,
           .clients = old.clients,
           .bytes_received = n.msg.bytes()};
    warn_of_another_build(p);
    p.joined_after_round = int64_t(round);
    log(fmt::format(
        "a client process (pid {}) takes the place of the lost one (pid {}): virtual clients {} "
        "from round {} on",
        p.pid, old.pid, fmt::join(p.clients, ", "), round + 1));
    peers[n.msg.peer] = p;
    *std::find(order.begin(), order.end(), place) = n.msg.peer;
    for (uint32_t c : p.clients) owner[c] = n.msg.peer;
    transport_.assign(n.msg.peer, p.clients);
    send(n.msg.peer, encode(welcome_for(p.clients, state()), envelope()));
    await_newcomer(n.msg.peer);
  }
}

// Its data load is no round's: the round waits until it is ready (or start_wait_seconds), so its
// first task's deadline, and its misses, start from there.
void Engine::await_newcomer(const std::string& id) {
  const auto t0 = Clock::now();
  const auto deadline = deadline_after(s_.start_wait_seconds);
  while (auto in = receive(deadline)) {
    if (in->msg.peer != id) continue;  // late answers of rounds the server has ended
    if (in->parsed.header.type == MessageType::kReady) {
      log(fmt::format("the new process is ready, its data loaded, after {:.2f} s",
                      seconds_since(t0)));
      return;
    }
    if (in->parsed.header.type == MessageType::kError) {
      const auto e = decode_error(in->parsed);
      drop(id, "could not start: " + (e.index() == 0 ? std::get<ErrorMsg>(e).reason
                                                     : std::string("(no reason given)")));
      return;
    }
  }
  log(
      fmt::format("the new process is not ready after {} s (start_wait_seconds); the rounds go on, "
                  "and it misses them until it is",
                  s_.start_wait_seconds));
}

void Engine::await_ready() {
  const auto t0 = Clock::now();
  const auto deadline = deadline_after(s_.start_wait_seconds);
  std::set<std::string> ready, waiting(order.begin(), order.end());
  ClosedWatch closed;
  while (!waiting.empty()) {
    auto in = receive(std::min(deadline, closed.check_at));
    if (!in && Clock::now() < deadline) {  // one that died loading its data is not waited for
      for (const std::string& id : gone(waiting, closed, [&](const auto& id) {
             return fmt::format(
                 "the process of virtual clients {} lost its connection while loading its data "
                 "and reconnected; its READY is awaited",
                 fmt::join(peers.at(id).clients, ", "));
           })) {
        waiting.erase(id);
        unreachable_.insert(id);  // round 1 does not wait for it either
        log(fmt::format(
            "the connection of the process of virtual clients {} closed before it was ready and "
            "did not come back within {:g} s (the process died, or its network did): the rounds "
            "begin without waiting for it",
            fmt::join(peers.at(id).clients, ", "), kReconnectSeconds));
      }
      continue;
    }
    if (!in) {  // the rounds' deadlines and missed-round counts take them from here
      std::vector<uint32_t> late;
      for (const auto& id : waiting)
        late.insert(late.end(), peers[id].clients.begin(), peers[id].clients.end());
      std::ranges::sort(late);
      log(fmt::format(
          "the process(es) of virtual clients {} are not ready (their data loaded) after {} "
          "s (start_wait_seconds): the rounds begin without waiting for them",
          fmt::join(late, ", "), s_.start_wait_seconds));
      return;
    }
    throw_if_failed_to_start(*in);
    if (in->parsed.header.type != MessageType::kReady) {
      reject(in->msg, fmt::format("expected READY once this process's data is loaded, got {}",
                                  message_type_name(in->parsed.header.type)));
      continue;
    }
    if (waiting.erase(in->msg.peer)) ready.insert(in->msg.peer);
  }
  log(fmt::format("{} client process(es) ready, their data loaded, after {:.2f} s{}", ready.size(),
                  seconds_since(t0),
                  ready.size() < order.size()
                      ? fmt::format(" ({} gone before)", order.size() - ready.size())
                      : ""));
}

void Engine::throw_if_failed_to_start(const Incoming& in) const {
  if (in.parsed.header.type != MessageType::kError) return;
  const auto e = decode_error(in.parsed);
  throw RunFailed(fmt::format("the process of virtual clients {} could not start: {}",
                              fmt::join(peers.at(in.msg.peer).clients, ", "),
                              e.index() == 0 ? std::get<ErrorMsg>(e).reason : "(no reason given)"));
}

void Engine::warn_of_shared_link(const std::vector<uint32_t>& clients) {
  if (s_.network.mode != NetworkMode::kEmulated || clients.empty()) return;
  const LinkProfile& link = s_.network.of(clients.front());
  std::vector<std::string> others;
  for (uint32_t c : clients)
    if (s_.network.of(c).name != link.name)
      others.push_back(fmt::format("{} ({})", c, s_.network.of(c).name));
  if (others.empty()) return;
  warnings.push_back(
      fmt::format("network.mode = \"emulated\" shapes one link per process: the process of "
                  "virtual clients {} sends and receives for all of them over client {}'s {} "
                  "link, also for {}; one client per process (processes = partition.clients) "
                  "gives each its own",
                  fmt::join(clients, ", "), clients.front(), link.name, fmt::join(others, ", ")));
  log("warning: " + warnings.back());
}

// Another commit, vector units or BLAS kernels sum floats otherwise: the run's bytes are no
// longer the one-build run's (docs/architecture.md, Determinism).
void Engine::warn_of_another_build(const Peer& p) {
  if (p.build.empty() || p.build == build_description()) return;
  warnings.push_back(fmt::format(
      "client process pid {} runs {}, the server {}: its sums may round apart from this build's, "
      "so the run's bytes are not a one-build run's",
      p.pid, p.build, build_description()));
  log("warning: " + warnings.back());
}

void Engine::add_peer(const Received& r, const HelloMsg& hello) {
  peers[r.peer] = Peer{.identity = r.peer,
                       .slots = hello.slots,
                       .pid = hello.pid,
                       .device = device_of(hello),
                       .build = hello.build,
                       .machine = hello.machine,
                       .bytes_received = r.bytes()};
  order.push_back(r.peer);
  warn_of_another_build(peers[r.peer]);
  log(fmt::format("client process {} of {} connected ({} slot(s))", peers.size(), s_.processes,
                  hello.slots));
}

void Engine::free_place(const std::string& id) {
  log(
      fmt::format("the client process with pid {} closed its connection before the run started "
                  "and did not come back within {:g} s: its place is free ({} of {} processes "
                  "now)",
                  peers.at(id).pid, kReconnectSeconds, peers.size() - 1, s_.processes));
  peers.erase(id);
  std::erase(order, id);
  transport_.forget(id);
}

// Virtual clients are dealt in proportion to the processes' slots: each goes to the process with
// the fewest clients per slot, ties to the one with the most slots, then the earliest HELLO. So
// which clients share a process depends on the slots, not on who said HELLO first (an emulated
// process's link and its losses are its first client's). A model-parallel group shares its
// replica's client instead.
void Engine::deal_clients() {
  if (s_.model_parallel()) {  // every process of replica r (a stage or a rank) holds client r
    const size_t parts = size_t(s_.model_parts());
    for (size_t i = 0; i < order.size(); ++i) {
      const auto c = uint32_t(i / parts);
      peers[order[i]].clients.push_back(c);
      if (i % parts == 0) owner[c] = order[i];
    }
    return;
  }
  std::vector<std::string> by_slots = order;
  std::stable_sort(by_slots.begin(), by_slots.end(),
                   [&](const auto& a, const auto& b) { return peers[a].slots > peers[b].slots; });
  for (uint32_t c = 0; c < num_clients; ++c) {
    const std::string* best = &by_slots[0];
    for (const auto& id : by_slots) {
      const Peer &p = peers[id], &b = peers[*best];
      if (p.clients.size() * size_t(b.slots) < b.clients.size() * size_t(p.slots)) best = &id;
    }
    peers[*best].clients.push_back(c);
    owner[c] = *best;
  }
  for (const auto& id : order)
    log(fmt::format("a process with {} slot(s) hosts {} virtual client(s)", peers[id].slots,
                    peers[id].clients.size()));
}

std::string Collected::missing_because() const {
  const bool timed_out = missing.size() > unreachable.size();
  return fmt::format(
      "{}{}", timed_out ? fmt::format(" within {} s", waited) : "",
      unreachable.empty() ? "" : fmt::format(" ({} not reachable)", fmt::join(unreachable, ", ")));
}

Collected Engine::collect(const CollectSpec& spec) {
  Collected out;
  out.waited = spec.seconds;
  // Keys whose process was not connected when its task was sent: no answer can come, so they are
  // not waited for. Unless every key is such (a connection coming back, every asked process
  // gone): then the deadline decides, as for any silent peer, and a run does not race through
  // its rounds.
  const auto process_of = [&](uint32_t k) -> const std::string& {
    return spec.key == CollectSpec::Key::kRank ? order.at(k) : owner.at(k);
  };
  for (uint32_t k : spec.expected)
    if (unreachable_.count(process_of(k))) out.unreachable.push_back(k);
  if (out.unreachable.size() == spec.expected.size()) out.unreachable.clear();
  const auto awaited_key = [&](uint32_t k) {
    return !std::binary_search(out.unreachable.begin(), out.unreachable.end(), k);
  };
  size_t want = std::min(spec.want, spec.expected.size() - out.unreachable.size());
  const auto unanswered = [&](uint32_t k) {  // awaited, and no answer yet
    return awaited_key(k) && !out.got.count(k) && !out.failed.count(k);
  };
  const auto silent = [&] {  // the processes of the unanswered keys
    std::set<std::string> ids;
    for (uint32_t k : spec.expected)
      if (unanswered(k)) ids.insert(process_of(k));
    return ids;
  };
  // Processes gone mid-round are not waited for either, under the same rule: not when that would
  // be every key.
  const auto stop_awaiting = [&](const std::vector<std::string>& gone) {
    std::vector<uint32_t> keys;
    for (uint32_t k : spec.expected)
      if (unanswered(k) && std::ranges::count(gone, process_of(k))) keys.push_back(k);
    if (spec.errors_are_fatal && !keys.empty())
      throw RunFailed(fmt::format(
          "round {}: the connection of {} closed and did not come back within {:g} s (did its "
          "process die?); the run cannot go on without it{}",
          round + 1, ranks_named(spec.rank_name, keys), kReconnectSeconds, spec.fatal_hint));
    if (out.unreachable.size() + keys.size() == spec.expected.size()) return;
    for (const std::string& id : gone)
      if (unreachable_.insert(id).second)
        log(
            fmt::format("round {}: the connection of the process of virtual clients {} closed and "
                        "did not come back within {:g} s (the process died, or its network did): "
                        "its answers are not waited for",
                        round + 1, fmt::join(peers.at(id).clients, ", "), kReconnectSeconds));
    out.unreachable.insert(out.unreachable.end(), keys.begin(), keys.end());
    std::ranges::sort(out.unreachable);
    want = std::min(spec.want, spec.expected.size() - out.unreachable.size());
  };
  ClosedWatch closed;
  size_t heard = 0;      // answers of awaited keys (an unreachable one's may come: it reconnected)
  bool expired = false;  // the deadline passed
  auto deadline = deadline_after(spec.seconds);
  const auto answered = [&] {  // the first answer shortens the deadline of the rest
    if (out.got.size() + out.failed.size() == 1 && spec.after_first &&
        *spec.after_first < spec.seconds) {
      deadline = std::min(deadline, deadline_after(*spec.after_first));
      out.waited = *spec.after_first;
    }
  };
  const auto t0 = Clock::now();
  auto note_at = deadline_after(kWaitNoteSeconds);  // a long wait says how it stands
  // an answer of a key not awaited still counts toward spec.want (async takes the first)
  while (heard < want && out.got.size() + out.failed.size() < spec.want) {
    auto in = receive(std::min({deadline, note_at, closed.check_at}), spec.floats);
    if (!in) {
      // gone first, then nothing left to read: what a process sent before it closed counts
      const auto ids = gone(silent(), closed, [&](const auto& id) {
        return fmt::format(
            "round {}: the process of virtual clients {} lost its connection and reconnected; "
            "its answer is awaited",
            round + 1, fmt::join(peers.at(id).clients, ", "));
      });
      if (!ids.empty()) {
        in = receive(Clock::now(), spec.floats);
        if (!in) {
          stop_awaiting(ids);
          continue;
        }
      }
    }
    if (!in && Clock::now() < deadline) {  // a receive ends up to a millisecond early
      if (Clock::now() < note_at) continue;
      log(fmt::format("round {}: {} of {} answers in after {:.0f} s; waiting up to {:.0f} s more",
                      round + 1, heard, want, seconds_since(t0),
                      std::chrono::duration<double>(deadline - Clock::now()).count()));
      note_at = deadline_after(kWaitNoteSeconds);
      continue;
    }
    if (!in) {
      expired = true;
      break;
    }
    const int process = process_index(in->msg.peer);
    const bool awaited =
        spec.key == CollectSpec::Key::kRank &&
        std::binary_search(spec.expected.begin(), spec.expected.end(), uint32_t(process));
    if (awaited && in->parsed.header.type == MessageType::kError) {
      auto e = decode_error(in->parsed);
      const std::string why = e.index() == 0 ? std::get<ErrorMsg>(e).reason : "?";
      if (spec.check_round && in->parsed.header.round != round) continue;  // an earlier round's
      if (spec.errors_are_fatal) {  // a neighbour's link timed out: whose process is gone?
        // Those that spoke this round are not (a failed worker exits after its ERROR, closing
        // its connection): what is in is read first (a message comes before its connection's
        // end on the same stream).
        std::set<uint32_t> spoke = {uint32_t(process)};
        for (const auto& [k, r] : out.got) spoke.insert(k);
        while (auto more = receive(Clock::now(), spec.floats))
          if (more->parsed.header.round == round)
            spoke.insert(uint32_t(process_index(more->msg.peer)));
        std::vector<uint32_t> silent_keys;
        for (uint32_t k : spec.expected)
          if (!spoke.count(k)) silent_keys.push_back(k);
        throw RunFailed(fmt::format("round {}: {} {} failed: {}{}", round + 1, spec.rank_name,
                                    process, why, closed_ranks_note(spec.rank_name, silent_keys)));
      }
      if (!out.got.count(uint32_t(process)) &&
          out.failed.emplace(uint32_t(process), why).second) {  // its first answer counts
        heard += awaited_key(uint32_t(process));
        answered();
      }
      continue;
    }
    if (in->parsed.header.type == MessageType::kReady) {  // later than await_ready waited
      log(fmt::format("the process of virtual clients {} is ready after the rounds began",
                      fmt::join(peers.at(in->msg.peer).clients, ", ")));
      continue;
    }
    if (late_released(spec, *in)) continue;
    if (const Header& h = in->parsed.header; spec.withdrawn && h.type == MessageType::kUpdate &&
                                             hosts(in->msg.peer, h.client) &&
                                             spec.withdrawn(h.client, h.round))
      continue;
    auto update = decode_update(in->parsed);
    if (auto* e = std::get_if<ProtocolError>(&update)) {
      reject(in->msg, e->reason);
      continue;
    }
    Reply r{std::move(*in), std::move(std::get<UpdateMsg>(update)), 0, process};
    if (const std::string why = check(spec, out, r); !why.empty()) {
      reject(r.in.msg, why);
      continue;
    }
    throw_if_non_finite(spec, r);
    Peer& peer = peers.at(r.in.msg.peer);
    peer.peak_rss_bytes = std::max(peer.peak_rss_bytes, r.update.peak_rss_bytes);
    const uint32_t key = r.key;
    out.got.emplace(key, std::move(r));
    heard += awaited_key(key);
    answered();
  }
  // (not heard < want: an answer from a key not awaited, its process reconnected, may have
  // made up spec.want)
  const bool timed_out = expired;
  for (uint32_t k : spec.expected)
    if (!out.got.count(k) && !out.failed.count(k)) {
      if (timed_out || !awaited_key(k))
        out.missing.push_back(k);
      else
        out.released.push_back(k);  // enough came first (want)
    }
  if (spec.check_round && spec.key == CollectSpec::Key::kClient) {
    // a client answers its tasks in order (skipping those a later one superseded): once one of
    // its answers is in, no earlier released round's can come
    std::erase_if(released_, [&](const auto& e) { return out.got.count(e.second) > 0; });
    for (uint32_t k : out.released) released_.emplace(round, k);
  }
  std::erase_if(out.unreachable,
                [&](uint32_t k) { return out.got.count(k) || out.failed.count(k); });
  return out;
}

std::string Engine::ranks_named(const char* name, const std::vector<uint32_t>& ranks) const {
  std::vector<std::string> named;
  for (uint32_t k : ranks)
    named.push_back(fmt::format("{} {} (pid {})", name, k, peers.at(order.at(k)).pid));
  return fmt::format("{}", fmt::join(named, ", "));
}

std::string Engine::closed_ranks_note(const char* name, const std::vector<uint32_t>& ranks) const {
  std::vector<uint32_t> closed;
  for (uint32_t k : ranks)
    if (!transport_.connected(order.at(k))) closed.push_back(k);
  return closed.empty() ? ""
                        : fmt::format(" (the connection of {} is closed: did its process die?)",
                                      ranks_named(name, closed));
}

std::string Engine::no_report(const char* name, const Collected& c, std::string_view whole,
                              std::string_view hint) const {
  return fmt::format(
      "round {}: no report from {}{} (did it die? the {} cannot go on without it{}){}", round + 1,
      ranks_named(name, c.missing), c.missing_because(), whole, hint,
      closed_ranks_note(name, c.missing));
}

bool Engine::late_released(const CollectSpec& spec, const Incoming& in) {
  const Header& h = in.parsed.header;
  if (!spec.check_round || h.type != MessageType::kUpdate || h.round > round ||
      !hosts(in.msg.peer, h.client) || !released_.count({h.round, h.client}))
    return false;
  // this round's and the client's earlier ones (skipped, or lost): no answer to them can follow
  std::erase_if(released_,
                [&](const auto& e) { return e.second == h.client && e.first <= h.round; });
  return true;
}

std::vector<std::string> Engine::gone(
    const std::set<std::string>& silent, ClosedWatch& w,
    const std::function<std::string(const std::string&)>& back_line) {
  std::vector<std::string> out;
  if (Clock::now() < w.check_at) return out;
  w.check_at = deadline_after(kConnectionCheckSeconds);
  for (const std::string& id : silent) {
    if (transport_.connected(id)) {  // (again: a message came on a new connection)
      w.since.erase(id);
      w.back.erase(id);
      continue;
    }
    if (const auto b = w.back.find(id); b != w.back.end()) {  // reconnected: still there?
      if (seconds_since(b->second) < kRecheckSeconds) continue;
      if (ping(id)) {
        b->second = Clock::now();
        continue;
      }
      w.back.erase(b);  // that connection closed too: watched as any closed one from here
    }
    const auto [it, first] = w.since.emplace(id, Clock::now());
    // ZeroMQ may not have let go of the closed connection yet, and a PING would go into it
    if (first) continue;
    if (ping(id)) {
      w.since.erase(it);
      w.back[id] = Clock::now();
      log(back_line(id));
    } else if (seconds_since(it->second) >= kReconnectSeconds) {
      out.push_back(id);
    }
  }
  return out;
}

bool Engine::ping(const std::string& id) {
  try {  // a diagnostic's bytes, left out of the run's traffic as the others are
    transport_.send(id, encode_ping(envelope()));
    return true;
  } catch (const PeerUnreachable&) {
    return false;
  }
}

void Engine::throw_if_non_finite(const CollectSpec& spec, const Reply& r) const {
  const std::string who =
      fmt::format("round {}: {} {}", round + 1,
                  spec.key == CollectSpec::Key::kClient ? "client" : "worker", r.key);
  for (size_t i = 0; i < r.update.vectors.size(); ++i) {
    const auto v = r.update.vectors[i];
    if (const size_t j = first_non_finite(v); j < v.size())
      throw Diverged(fmt::format(
          "{}'s update holds a non-finite value ({}) at index {} of vector {}", who, v[j], j, i));
  }
  if (!std::isfinite(r.update.loss_sum)) throw Diverged(who + "'s loss is not finite");
}

std::string Engine::check(const CollectSpec& spec, const Collected& so_far, Reply& r) const {
  const Header& h = r.in.parsed.header;
  const std::string& who = r.in.msg.peer;
  if (lost.count(who)) return "this process missed round deadlines and was dropped from the run";
  if (r.update.kind != spec.kind)
    return fmt::format("expected an answer to a {} task, got one to {}", task_kind_name(spec.kind),
                       task_kind_name(r.update.kind));
  if (spec.check_round && h.round < round)  // its process missed that round's deadline
    return fmt::format("an update for round {} came after that round's deadline (round {} is on)",
                       h.round + 1, round + 1);
  if (spec.check_round && h.round != round)
    return fmt::format("update for round {} during round {}", h.round + 1, round + 1);
  if (spec.key == CollectSpec::Key::kClient) {
    r.key = h.client;
    if (!hosts(who, r.key)) return fmt::format("client {} is not hosted by this process", r.key);
  } else {
    r.key = uint32_t(r.process);
  }
  if (!std::binary_search(spec.expected.begin(), spec.expected.end(), r.key))
    return fmt::format("{} {} was not asked this round",
                       spec.key == CollectSpec::Key::kClient ? "client" : "worker", r.key);
  if (so_far.got.count(r.key)) return fmt::format("a second reply for {}", r.key);
  // weights come from the manifest, not the peer (a master's backward reply carries no count)
  if (spec.key == CollectSpec::Key::kClient && spec.kind != TaskKind::kBackward) {
    const uint64_t n = expected_samples(r.key, spec.kind, spec.batch);
    if (r.update.num_samples != n)
      return fmt::format("client {}'s update reports {} samples; its task covers {}", r.key,
                         r.update.num_samples, n);
  }
  return spec.accept ? spec.accept(r) : "";
}

uint64_t Engine::expected_samples(uint32_t c, TaskKind kind, int64_t batch) const {
  const uint64_t n = shard_sizes_.at(c);
  if (kind == TaskKind::kLocalTrain || batch <= 0) return n;
  return std::min(n, uint64_t(batch));  // a gradient, or the master's slice of the batch
}

Engine::ByteSnapshot Engine::bytes_snapshot() const {
  ByteSnapshot b;
  for (const auto& [id, p] : peers) b[id] = {p.bytes_sent, p.bytes_received};
  return b;
}

std::vector<ProcessRecord> Engine::per_process_bytes(
    const ByteSnapshot& before, const std::map<std::string, std::vector<uint32_t>>& tasks) const {
  std::vector<ProcessRecord> out;
  for (size_t i = 0; i < order.size(); ++i) {
    const Peer& p = peers.at(order[i]);
    const auto& b = before.at(order[i]);
    const auto t = tasks.find(order[i]);
    out.push_back({int64_t(i), t == tasks.end() ? 0 : t->second.size(), p.bytes_sent - b.first,
                   p.bytes_received - b.second, lost.count(order[i]) > 0});
    if (p.peak_rss_bytes > 0) out.back().peak_rss_mib = double(p.peak_rss_bytes) / (1 << 20);
  }
  return out;
}

std::pair<uint64_t, uint64_t> Engine::total_bytes() const {
  auto [sent, received] = bytes_carried;
  for (const auto& [id, p] : peers) sent += p.bytes_sent, received += p.bytes_received;
  return {sent, received};
}

int Engine::process_index(const std::string& identity) const {
  const auto it = std::find(order.begin(), order.end(), identity);
  return it == order.end() ? -1 : int(it - order.begin());
}

std::string Engine::device_of(const HelloMsg& h) const {
  return h.device.empty() ? s_.device : h.device;
}

std::string Engine::hello_refusal(const HelloMsg& h) const {
  if (h.slots > s_.max_slots)  // the config grants slots; a peer may not take more
    return fmt::format(
        "this run grants at most {} slot(s) per process (max_slots); start the client with "
        "--slots {} or raise max_slots",
        s_.max_slots, s_.max_slots);
  if (!launch_config.empty() && !h.run_config.empty() && h.run_config != launch_config)
    return fmt::format(
        "this server runs a job of another config (run config {} here, {} on that rank): a rank "
        "of another job on the same MASTER_PORT, or one started with another config or --set; "
        "give each job its own MASTER_PORT and every rank of a job the same command",
        launch_config, h.run_config);
  return "";
}

std::string Engine::stranger_refusal() const {
  return fmt::format(
      "this run already has its {} client process(es) (processes = {}), all there when it "
      "started; a process joins a run under way only to take the place of one the run lost{}",
      order.size(), s_.processes,
      replacement_refusal_.empty() ? "" : ", which this run cannot do: " + replacement_refusal_);
}

bool Engine::hosts(const std::string& identity, uint32_t client) const {
  const auto it = owner.find(client);
  return it != owner.end() && it->second == identity;
}

std::map<std::string, std::vector<uint32_t>> Engine::hosted() const {
  std::map<std::string, std::vector<uint32_t>> out;
  for (const auto& [id, p] : peers) out[id] = p.clients;
  return out;
}

std::vector<uint32_t> Engine::all_clients() const {
  std::vector<uint32_t> ids(num_clients);
  std::iota(ids.begin(), ids.end(), 0u);
  return ids;
}

std::vector<uint32_t> Engine::all_ranks() const {
  std::vector<uint32_t> ranks(order.size());
  std::iota(ranks.begin(), ranks.end(), 0u);
  return ranks;
}

HostRecord Engine::host_record(const std::string& id) const {
  const Peer& p = peers.at(id);
  return {.slots = p.slots,
          .clients = p.clients,
          .lost = lost.count(id) > 0,
          .joined_after_round = p.joined_after_round,
          .device = p.device,
          .pid = p.pid ? std::optional(p.pid) : std::nullopt,
          .build = p.build.empty() ? std::nullopt : std::optional(p.build),
          .machine = p.machine.empty() ? std::nullopt : std::optional(p.machine)};
}

std::vector<HostRecord> Engine::host_records() const {
  std::vector<HostRecord> hosts;
  for (const auto& id : order) hosts.push_back(host_record(id));
  return hosts;
}

std::vector<HostRecord> Engine::replaced_records() const {
  std::vector<HostRecord> out;
  for (const auto& [id, after] : replaced_) {
    out.push_back(host_record(id));
    out.back().replaced_after_round = after;
  }
  return out;
}

}  // namespace fedpar
