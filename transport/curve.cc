// CURVE keys, sockets and the ZAP handler; see curve.h.
#include "transport/curve.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <vector>
#include <zmq_addon.hpp>

#include "core/check.h"

namespace fedpar {
namespace fs = std::filesystem;
namespace {

constexpr size_t kZ85Key = 40;

bool is_z85_key(const std::string& k) {
  uint8_t raw[32];
  return k.size() == kZ85Key && zmq_z85_decode(raw, k.c_str()) != nullptr;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string z85(const uint8_t* raw) {
  char text[kZ85Key + 1];
  zmq_z85_encode(text, raw, 32);
  return text;
}

}  // namespace

bool is_curve_key(const std::string& key) { return is_z85_key(key); }

CurveKeyPair generate_curve_key_pair() {
  char pub[kZ85Key + 1], sec[kZ85Key + 1];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw Error("this ZeroMQ cannot make CURVE keys (it was built without libsodium)");
  return {pub, sec};
}

fs::path write_curve_key_pair(const fs::path& dir, const std::string& name,
                              const CurveKeyPair& keys) {
  if (name.empty() || name.find('/') != std::string::npos)
    throw Error(fmt::format("a key name is a plain file name, got '{}'", name));
  fs::create_directories(dir);
  const fs::path key = dir / (name + ".key"), pub = dir / (name + ".pub");
  for (const auto& p : {key, pub})
    if (fs::exists(p))
      throw Error(
          fmt::format("{} exists: remove it first (keys are never overwritten)", p.string()));
  {
    std::ofstream out(key);
    if (!out) throw Error(fmt::format("cannot write {}", key.string()));
    ::chmod(key.c_str(), 0600);  // before the secret is in it
    out << fmt::format(
        "# fedpar CURVE key pair '{}': keep this file secret (fedpar keygen)\n"
        "public = \"{}\"\nsecret = \"{}\"\n",
        name, keys.public_key, keys.secret_key);
    if (!out.flush()) throw Error(fmt::format("cannot write {}", key.string()));
  }
  std::ofstream out(pub);
  out << fmt::format(
      "# fedpar CURVE public key '{}': give it to whoever must let it in\n"
      "public = \"{}\"\n",
      name, keys.public_key);
  if (!out.flush()) throw Error(fmt::format("cannot write {}", pub.string()));
  return key;
}

CurveKeyPair read_curve_keys(const fs::path& file) {
  std::ifstream in(file);
  if (!in)
    throw Error(
        fmt::format("cannot read the key file {} (make one with fedpar keygen)", file.string()));
  std::map<std::string, std::string> kv;
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;  // Z85 text itself may hold a '#'

    const auto eq = line.find('=');
    std::string v = eq == std::string::npos ? "" : trim(line.substr(eq + 1));
    if (eq == std::string::npos || v.size() < 2 || v.front() != '"' || v.back() != '"')
      throw Error(
          fmt::format("{}: expected key = \"Z85 text\" lines, got '{}'", file.string(), line));
    kv[trim(line.substr(0, eq))] = v.substr(1, v.size() - 2);
  }
  CurveKeyPair k{kv["public"], kv["secret"]};
  if (!is_z85_key(k.public_key) || (!k.secret_key.empty() && !is_z85_key(k.secret_key)))
    throw Error(
        fmt::format("{} holds no valid CURVE key (40 Z85 characters each; make one with "
                    "fedpar keygen)",
                    file.string()));
  return k;
}

std::set<std::string> read_allowed_keys(const fs::path& dir, bool required) {
  // absent is a typo even where empty is fine (fedpar run lets its own clients in besides): the
  // run's config keeps the path, and a rerun by fedpar server would be refused there
  if (!fs::is_directory(dir))
    throw Error(
        fmt::format("security.clients: {} is not a folder of client .pub files{}", dir.string(),
                    required ? "" : " (it may be empty: fedpar run lets its own clients in)"));
  std::set<std::string> keys;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".pub") keys.insert(read_curve_keys(e.path()).public_key);
  if (keys.empty() && required)
    throw Error(
        fmt::format("security.clients: {} holds no .pub file, so no client could join "
                    "(fedpar keygen NAME writes NAME.pub)",
                    dir.string()));
  return keys;
}

void make_curve_server(zmq::socket_t& sock, const CurveServer& c) {
  FEDPAR_CHECK(!c.keys.secret_key.empty()) << "a CURVE server needs its secret key";
  sock.set(zmq::sockopt::zap_domain, "fedpar");  // every peer goes through ZAP
  sock.set(zmq::sockopt::curve_server, true);
  sock.set(zmq::sockopt::curve_secretkey, c.keys.secret_key);
}

void make_curve_client(zmq::socket_t& sock, const CurveClient& c) {
  FEDPAR_CHECK(!c.keys.secret_key.empty()) << "a CURVE client needs its secret key";
  sock.set(zmq::sockopt::curve_serverkey, c.server_key);
  sock.set(zmq::sockopt::curve_publickey, c.keys.public_key);
  sock.set(zmq::sockopt::curve_secretkey, c.keys.secret_key);
}

CurveGuard::CurveGuard(zmq::context_t& ctx, zmq::socket_t* sock,
                       std::optional<std::set<std::string>> allowed, bool quiet, std::string who)
    : allowed_(allowed.value_or(std::set<std::string>{})),
      decided_(allowed.has_value()),
      quiet_(quiet),
      who_(std::move(who)) {
  static std::atomic<int> guards{0};
  monitor_endpoint_ = fmt::format("inproc://fedpar-curve-monitor-{}", guards++);
  auto zap = std::make_shared<zmq::socket_t>(ctx, zmq::socket_type::rep);
  zap->set(zmq::sockopt::linger, 0);
  try {
    zap->bind("inproc://zeromq.zap.01");  // ZeroMQ asks this endpoint about every handshake
  } catch (const zmq::error_t& e) {
    throw Error(fmt::format("cannot start the CURVE guard: {}", e.what()));
  }
  std::shared_ptr<zmq::socket_t> monitor;
  if (sock) {
    if (zmq_socket_monitor(
            sock->handle(), monitor_endpoint_.c_str(),
            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0)
      throw Error("cannot monitor the CURVE socket's handshakes");
    monitor = std::make_shared<zmq::socket_t>(ctx, zmq::socket_type::pair);
    monitor->set(zmq::sockopt::linger, 0);
    monitor->connect(monitor_endpoint_);
  }
  thread_ = std::thread([this, zap, monitor] { serve(*zap, monitor.get()); });
}

void CurveGuard::allow(std::set<std::string> keys) {
  std::lock_guard lock(mutex_);
  allowed_ = std::move(keys);
  decided_ = true;
}

bool CurveGuard::allowed(const std::string& key) {
  std::lock_guard lock(mutex_);
  return allowed_.count(key) > 0;
}

CurveGuard::~CurveGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void CurveGuard::note(const std::string& what) {
  ++refused_;
  if (quiet_) return;
  const std::string line = log_.next(what, [&](uint64_t more, uint64_t all) {
    return fmt::format("refused {} more peer connection(s) ({} in all); the last: {}", more, all,
                       what);
  });
  if (!line.empty()) fmt::print(stderr, "{}: {}\n", who_, line);
}

// RFC 27 (ZAP): request frames version, request id, domain, address, identity, mechanism,
// credentials (CURVE: the client's 32-byte public key); reply version, request id, status code,
// status text, user id, metadata.
void CurveGuard::serve(zmq::socket_t& zap, zmq::socket_t* monitor) {
  while (!stop_) {
    // Undecided, the ZAP socket is not read: requests wait in its queue for the allow-list.
    const bool decided = decided_;
    std::vector<zmq::pollitem_t> items;
    if (decided) items.push_back({zap.handle(), 0, ZMQ_POLLIN, 0});
    if (monitor) items.push_back({monitor->handle(), 0, ZMQ_POLLIN, 0});
    if (items.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(decided ? 100 : 10));
    } catch (const zmq::error_t&) {
      continue;  // EINTR
    }
    const bool zap_ready = decided && (items[0].revents & ZMQ_POLLIN);
    const bool monitor_ready = monitor && (items.back().revents & ZMQ_POLLIN);
    if (zap_ready) {
      std::vector<zmq::message_t> req;
      if (!zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
      const bool well_formed =
          req.size() >= 7 && req[5].to_string() == "CURVE" && req[6].size() == 32;
      const std::string key =
          well_formed ? z85(static_cast<const uint8_t*>(req[6].data())) : std::string();
      const bool ok = well_formed && allowed(key);
      if (!ok)
        note(fmt::format("refused a peer at {}: {}", req.size() > 3 ? req[3].to_string() : "?",
                         well_formed ? "its CURVE key " + key + " is not on the allow-list"
                                     : "not a CURVE handshake"));
      const std::string id = req.size() > 1 ? req[1].to_string() : "";
      const std::string code = ok ? "200" : "400", text = ok ? "OK" : "not allowed";
      const std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"),
                                                    zmq::buffer(id),
                                                    zmq::buffer(code),
                                                    zmq::buffer(text),
                                                    zmq::const_buffer(nullptr, 0),
                                                    zmq::const_buffer(nullptr, 0)};
      zmq::send_multipart(zap, reply);
    }
    if (monitor_ready) {
      std::vector<zmq::message_t> ev;
      if (!zmq::recv_multipart(*monitor, std::back_inserter(ev), zmq::recv_flags::dontwait))
        continue;
      note(
          fmt::format("a peer failed the CURVE handshake on this server's {} (no key, or "
                      "another server's public key as its --server-key; ZeroMQ does not say "
                      "which peer)",
                      ev.size() > 1 ? ev[1].to_string() : "?"));
    }
  }
}

}  // namespace fedpar
