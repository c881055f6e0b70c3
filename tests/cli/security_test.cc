// CURVE with real processes: a server with a key pair and an allow-list trains with its allowed
// client exactly what the plaintext run trains, while a plaintext peer and a peer whose key is
// not on the list never get a byte of the run (not even an ERROR) and are logged; the links
// between workers are encrypted with the run's worker keys and change no bit; keys are files
// that `fedpar keygen` writes and refuses to overwrite, and a bind to a non-loopback address
// without keys warns.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/check.h"
#include "protocol/messages.h"
#include "tests/util/distributed_run.h"
#include "tests/util/process.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"
#include "transport/curve.h"

namespace fedpar {
namespace {

using testing::TempDir;

// A peer that says HELLO (with CURVE keys when given) and counts what comes back in 3 s.
int intruder(const std::string& ep, const CurveClient* curve) {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, 3000);
  if (curve) make_curve_client(s, *curve);
  s.connect(ep);
  const WireMessage hello = encode(HelloMsg{.slots = 1000, .pid = 1});
  std::vector<zmq::const_buffer> bufs;
  for (const auto& f : hello.spans()) bufs.push_back(zmq::buffer(f.data(), f.size()));
  zmq::send_multipart(s, bufs, zmq::send_flags::dontwait);
  int got = 0;
  std::vector<zmq::message_t> reply;
  while (zmq::recv_multipart(s, std::back_inserter(reply))) ++got, reply.clear();
  return got;
}

TEST(Curve, OnlyAllowedKeysJoinAndTheRunTrainsWhatPlaintextTrains) {
  TempDir tmp;
  const auto server = generate_curve_key_pair(), alice = generate_curve_key_pair(),
             mallory = generate_curve_key_pair();
  const auto server_key = write_curve_key_pair(tmp / "keys", "server", server);
  const auto alice_key = write_curve_key_pair(tmp / "keys", "alice", alice);
  std::filesystem::create_directories(tmp / "keys" / "allowed");  // the server holds .pub only
  std::filesystem::copy_file(tmp / "keys" / "alice.pub", tmp / "keys" / "allowed" / "alice.pub");
  const std::vector<std::string> sets = {"regime=model", "rounds=5", "partition.clients=4",
                                         "stragglers.delay_seconds=0:0.3"};
  const auto plain = testing::run_distributed(tmp, "plain", "tcp://127.0.0.1:*", 1, sets);
  ASSERT_EQ(plain.server_code, 0) << plain.err;

  std::atomic<int> plaintext_got{-1}, mallory_got{-1};
  std::thread a, b;
  const CurveClient as_mallory{mallory, server.public_key};
  std::vector<std::string> secure = sets;
  secure.push_back("security.key=" + server_key.string());
  secure.push_back("security.clients=" + (tmp / "keys" / "allowed").string());
  secure.push_back("processes=1");  // the intruders are not processes of the run
  const auto run = testing::run_distributed(
      tmp, "curve", "tcp://127.0.0.1:*", 1, secure,
      [&](const std::string& ep) {
        a = std::thread([&, ep] { plaintext_got = intruder(ep, nullptr); });
        b = std::thread([&, ep] { mallory_got = intruder(ep, &as_mallory); });
      },
      {}, {"--key", alice_key.string(), "--server-key", (tmp / "keys" / "server.pub").string()});
  a.join();
  b.join();
  ASSERT_EQ(run.server_code, 0) << run.err;
  EXPECT_EQ(run.hash, plain.hash);  // encryption changes the bytes on the wire, not the model
  EXPECT_EQ(plaintext_got, 0);
  EXPECT_EQ(mallory_got, 0);
  EXPECT_NE(run.err.find("its CURVE key " + mallory.public_key + " is not on the allow-list"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("a peer failed the CURVE handshake"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("WARNING"), std::string::npos) << run.err;
}

// The links between workers speak CURVE too: each worker makes a key pair for the run and the
// server hands each its neighbours' keys with their endpoints. The ring all-reduce, a pipeline
// of two data replicas (its stage links and the replica rings) and a tensor pair train with
// [security] exactly the bits their plaintext runs train.
TEST(Curve, WorkerLinksSpeakCurveAndTrainWhatPlaintextTrains) {
  TempDir tmp;
  const auto server_key = write_curve_key_pair(tmp / "keys", "server", generate_curve_key_pair());
  std::filesystem::create_directories(tmp / "keys" / "none");  // `fedpar run` adds its clients'
  std::ofstream(tmp / "run.toml")
      << "seed = 3\nregime = 'gradient'\nrounds = 3\n[data]\nname = 'synthetic'\niid = true\n"
         "[model]\nname = 'mlp'\nhidden = [32, 24]\n[sgd]\nbatch = 24\n";
  const std::string secure = " --set security.key=" + server_key.string() +
                             " --set security.clients=" + (tmp / "keys" / "none").string();
  const std::vector<std::pair<std::string, std::string>> topologies = {
      {"allreduce", "--set topology=allreduce --set processes=2 --set partition.clients=2"},
      {"pipeline",
       "--set topology=pipeline --set processes=4 --set grid.data=2 --set partition.clients=2"},
      {"tensor", "--set topology=tensor --set processes=2 --set partition.clients=1"}};
  for (const auto& [name, sets] : topologies) {
    std::vector<float> params[2];
    for (const bool curve : {false, true}) {
      const std::string run_name = name + (curve ? "-curve" : "-plain");
      const auto r = testing::run_fedpar(
          "run " + (tmp / "run.toml").string() + " --set results_dir=" + (tmp / "res").string() +
              " --set name=" + run_name + " " + sets + (curve ? secure : ""),
          tmp.path());
      ASSERT_EQ(r.code, 0) << run_name << ": " << r.err;
      EXPECT_EQ(r.err.find("refused"), std::string::npos) << run_name << ": " << r.err;
      params[curve] = testing::final_params(tmp / "res" / run_name);
      // the run's config keeps the user's allow-list, not fedpar run's own throw-away one, so
      // its README's commands work after the run
      const std::string resolved = testing::slurp(tmp / "res" / run_name / "config.resolved.toml");
      EXPECT_EQ(curve, resolved.find((tmp / "keys" / "none").string()) != std::string::npos)
          << resolved;
      EXPECT_EQ(resolved.find("fedpar-run-"), std::string::npos) << resolved;
      const std::string readme = testing::slurp(tmp / "res" / run_name / "README.md");
      EXPECT_EQ(curve, readme.find("--key NAME.key --server-key SERVER.pub") != std::string::npos)
          << readme;
    }
    ASSERT_FALSE(params[0].empty());
    EXPECT_EQ(params[0], params[1]) << name;
  }
}

// A `fedpar client` the keyed server turns away, without keys or with a key not on its list, is
// told the server refuses its handshake and what lets a client in, not that the server is gone.
TEST(Curve, ARefusedClientIsToldWhyNotThatTheServerIsGone) {
  TempDir tmp;
  const auto server_key = write_curve_key_pair(tmp / "keys", "server", generate_curve_key_pair());
  write_curve_key_pair(tmp / "keys", "alice", generate_curve_key_pair());
  const auto mallory_key =
      write_curve_key_pair(tmp / "mallory", "mallory", generate_curve_key_pair());
  std::filesystem::create_directories(tmp / "keys" / "allowed");
  std::filesystem::copy_file(tmp / "keys" / "alice.pub", tmp / "keys" / "allowed" / "alice.pub");
  const pid_t server = testing::spawn_fedpar(
      testing::server_args(
          tmp, "keyed", "keyed", "tcp://127.0.0.1:*", 1,
          {"security.key=" + server_key.string(),
           "security.clients=" + (tmp / "keys" / "allowed").string(), "wait_seconds=30"}),
      tmp / "keyed.out", tmp / "keyed.err");
  const std::string ep = testing::wait_for_file(tmp / "keyed.ep", 20);
  ASSERT_FALSE(ep.empty()) << testing::slurp(tmp / "keyed.err");
  for (const bool with_key : {false, true}) {
    std::vector<std::string> args = {"client", "--wait", "20", "--server", ep};
    if (with_key)
      args.insert(args.end(), {"--key", mallory_key.string(), "--server-key",
                               (tmp / "keys" / "server.pub").string()});
    const pid_t client = testing::spawn_fedpar(args, tmp / "c.out", tmp / "c.err");
    EXPECT_EQ(testing::wait_exit(client, 20).value_or(-99), kExitRunFailed);
    const std::string err = testing::slurp(tmp / "c.err");
    EXPECT_NE(err.find("has refused this client's handshake"), std::string::npos) << err;
    EXPECT_EQ(err.find("lost the connection"), std::string::npos) << err;
  }
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
}

TEST(Curve, KeyFilesAreNeverOverwrittenAndBadOnesAreNamed) {
  TempDir tmp;
  const auto k = write_curve_key_pair(tmp.path(), "a", generate_curve_key_pair());
  EXPECT_EQ(std::filesystem::status(k).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  EXPECT_THROW(write_curve_key_pair(tmp.path(), "a", generate_curve_key_pair()), Error);
  EXPECT_EQ(read_curve_keys(tmp / "a.pub").secret_key, "");
  EXPECT_EQ(read_curve_keys(k).public_key, read_curve_keys(tmp / "a.pub").public_key);
  std::ofstream(tmp / "bad.pub") << "public = \"short\"\n";
  try {
    read_curve_keys(tmp / "bad.pub");
    FAIL() << "a short key was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no valid CURVE key"), std::string::npos);
  }
  std::filesystem::create_directories(tmp / "empty");
  EXPECT_THROW(read_allowed_keys(tmp / "empty"), Error);
  // beside fedpar run's own clients an empty folder lets none else in; an absent one is a typo
  EXPECT_TRUE(read_allowed_keys(tmp / "empty", /*required=*/false).empty());
  EXPECT_NE(testing::error_of([&] { read_allowed_keys(tmp / "emtpy", /*required=*/false); })
                .find("is not a folder of client .pub files (it may be empty: fedpar run lets "
                      "its own clients in)"),
            std::string::npos);
  // the server's secret given to a client as --server-key is refused (it would work, and
  // spread the secret)
  testing::expect_refused(fmt::format("client --server tcp://127.0.0.1:1 --key {} --server-key {}",
                                      k.string(), k.string()),
                          tmp.path(), 2, "holds the server's secret key: give the client its .pub");
}

TEST(Curve, APlaintextBindBeyondLoopbackWarns) {
  TempDir tmp;
  const pid_t server = testing::spawn_fedpar(
      {"server", "--set", "bind=tcp://0.0.0.0:*", "--set", "data.name=synthetic", "--set",
       "model.name=logreg", "--set", "start_wait_seconds=0.5", "--set",
       "results_dir=" + (tmp / "res").string()},
      tmp / "out", tmp / "err");
  testing::wait_exit(server, 30);
  EXPECT_NE(testing::slurp(tmp / "err")
                .find("WARNING: tcp://0.0.0.0:* is reachable from other "
                      "machines and the run is in plaintext"),
            std::string::npos)
      << testing::slurp(tmp / "err");
  // no client reaches 0.0.0.0: the hint names the server's host to fill in
  EXPECT_NE(testing::slurp(tmp / "err")
                .find("start them with: fedpar client --server "
                      "tcp://SERVER_HOST:"),
            std::string::npos)
      << testing::slurp(tmp / "err");
}

}  // namespace
}  // namespace fedpar
