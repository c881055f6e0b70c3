// The fedpar client process: connects a ZeroMQ DEALER socket to the server, says HELLO, receives
// its virtual clients, shards and the run's config, loads the dataset from its own disk, and
// answers every TASK with one UPDATE per virtual client until told to STOP.
#pragma once

#include <string>

namespace fedpar {

struct ClientOptions {
  std::string server;          // tcp://host:port or ipc://path
  int slots = 1;               // how many virtual clients this process offers to host
  double wait_seconds = 300;   // how long the server may stay silent before the client gives up
  std::string device;          // cpu | cuda; empty: the run config's `device`
  bool quiet = false;
};

int run_client(const ClientOptions& opts);

}  // namespace fedpar
