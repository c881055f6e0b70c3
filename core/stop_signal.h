// SIGINT, SIGTERM and SIGHUP as a request to stop: the handler only sets a flag, which the long
// loops poll (a receive, a training step), so a stopped command ends by unwinding and every
// destructor runs (a results folder's partial copy is removed) instead of dying mid-write.
#pragma once

#include <string>
#include <vector>

#include "core/check.h"

namespace fedpar {

// What a polled loop throws once a stop signal arrived; commands exit 128 + signal.
class Interrupted : public Error {
 public:
  // kept: the run's rounds were kept (said already, with how to resume it), not everything removed
  explicit Interrupted(int signal, bool kept = false);
  int signal() const { return signal_; }
  bool kept() const { return kept_; }

 private:
  int signal_;
  bool kept_;
};

// SIGINT, SIGTERM and SIGHUP, less those ignored (set to SIG_IGN) when the process started: what
// a command stops on. An ignored signal stays ignored (nohup's SIGHUP, the SIGINT of a job a
// non-interactive shell put in the background): before, a handler replaced the ignore, so
// `nohup fedpar run` still died with its terminal, and such a job's Ctrl-C counted or not
// depending on when it came. Asked before any handler is installed, the current disposition is
// the inherited one.
std::vector<int> stop_signals();
void install_stop_handlers();
// For a process that needs no unwinding (a client: the server keeps the run): on a stop signal,
// write "WHO: stopped by SIGTERM" to stderr and die of the signal, exit code 128 + it as before.
void install_last_words(const std::string& who);
void throw_if_stopped();
bool stop_requested();  // a stop signal arrived (what throw_if_stopped would throw on)
std::string signal_name(int signal);  // "SIGINT", or "signal 42"

}  // namespace fedpar
