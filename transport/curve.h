// CURVE authentication and encryption (ZeroMQ's CurveZMQ, libsodium) for the server's socket and
// its clients: key pairs in files `fedpar keygen` writes, an allow-list of client public keys, and
// the ZAP handler that holds every connecting peer against that list. A peer without a key (or
// without the server's public key) fails the handshake, one with a key not on the list is
// refused by ZAP; both are logged, and neither ever reaches the server's receive loop.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "transport/log_throttle.h"

namespace fedpar {

// Z85 text of 40 characters each (ZeroMQ's encoding of the 32-byte keys).
struct CurveKeyPair {
  std::string public_key, secret_key;
};

CurveKeyPair generate_curve_key_pair();
// Whether `key` is a CURVE key as Z85 text (40 characters that decode).
bool is_curve_key(const std::string& key);
// NAME.key (both keys, mode 0600) and NAME.pub (the public key) in `dir`; returns the .key path.
// Refuses to overwrite a key pair. Throws Error.
std::filesystem::path write_curve_key_pair(const std::filesystem::path& dir,
                                           const std::string& name, const CurveKeyPair& keys);
// Reads a .key file (both keys) or a .pub file (public key only: secret_key empty); Error naming
// the file when it is not one.
CurveKeyPair read_curve_keys(const std::filesystem::path& file);
// Every *.pub in `dir`: the client keys the server lets in. Error when `dir` is no folder, or
// holds none and they are `required`.
std::set<std::string> read_allowed_keys(const std::filesystem::path& dir, bool required = true);

// The server's side: its key pair and the clients it lets in.
struct CurveServer {
  CurveKeyPair keys;
  std::set<std::string> allowed;
};
// A client's side: its key pair and the server's public key.
struct CurveClient {
  CurveKeyPair keys;
  std::string server_key;
};

// Sets a socket up as a CURVE server (with ZAP domain "fedpar") or client.
void make_curve_server(zmq::socket_t& sock, const CurveServer& c);
void make_curve_client(zmq::socket_t& sock, const CurveClient& c);

// The ZAP handler of `ctx` (one per context) and, given a socket, a monitor of its failed
// handshakes, on a thread of their own: a peer whose key is not allowed is refused, and every
// refusal and failed handshake is logged as "`who`: ..." (the first 20, then a count every 10 s)
// unless `quiet`. Without an allow-list yet (nullopt), handshakes wait for allow() (ZeroMQ gives
// a handshake 30 s): a refused CURVE client would never reconnect. Must exist before the guarded
// sockets bind; stops with the object.
class CurveGuard {
 public:
  CurveGuard(zmq::context_t& ctx, zmq::socket_t* sock, std::optional<std::set<std::string>> allowed,
             bool quiet, std::string who = "server");
  ~CurveGuard();
  CurveGuard(const CurveGuard&) = delete;
  CurveGuard& operator=(const CurveGuard&) = delete;
  uint64_t refused() const { return refused_; }  // ZAP refusals and failed handshakes so far
  // Sets the allow-list (a worker learns its neighbours' keys after it has bound).
  void allow(std::set<std::string> keys);

 private:
  void serve(zmq::socket_t& zap, zmq::socket_t* monitor);
  void note(const std::string& what);
  bool allowed(const std::string& key);
  std::mutex mutex_;  // guards allowed_
  std::set<std::string> allowed_;
  std::atomic<bool> decided_;  // allowed_ is set: ZAP requests are answered
  bool quiet_;
  std::string who_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  LogThrottle log_;  // the guard thread's
  std::string monitor_endpoint_;
  std::thread thread_;
};

}  // namespace fedpar
