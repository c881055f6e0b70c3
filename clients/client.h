// The fedpar client process: connects to the server (transport/), says HELLO, receives its virtual
// clients, shards and the run's resolved config, loads the dataset from its own disk, and answers
// every TASK with one UPDATE per virtual client (or per rank) until told to STOP.
#pragma once

#include <string>
#include <zmq.hpp>

namespace fedpar {

struct ClientOptions {
  std::string server;         // tcp://host:port or ipc://path
  int slots = 1;              // how many virtual clients this process offers to host
  double wait_seconds = 300;  // how long the server may stay silent before the client gives up
  std::string device;         // cpu | cuda; empty: the run config's `device`
  std::string data_dir;       // folder holding mnist/ here; empty: the run config's data.dir
  bool quiet = false;
  zmq::context_t* context = nullptr;  // shared with the server's thread for inproc:// (tests)
  std::string key_file;         // CURVE: this client's key pair (fedpar keygen); empty: plaintext
  std::string server_key_file;  // CURVE: the server's public key (.pub)
  // The largest frame taken from the server (a WELCOME's shard lists, a TASK's model): a larger
  // one drops the connection before it is buffered.
  int64_t max_frame_mib = 1024;
  // fedpar launch: run_config_hash of this rank's own config, sent in HELLO (the server of
  // another job refuses it); "" otherwise
  std::string run_config;
};

// 0 when the run completed; kExitEndedByServer when the server's STOP said it did not (its reason
// printed unless quiet). Throws Error or RunFailed when this process cannot go on.
int run_client(const ClientOptions& opts);

}  // namespace fedpar
