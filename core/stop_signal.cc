// The stop flag; see stop_signal.h.
#include "core/stop_signal.h"

#include <fmt/format.h>

#include <csignal>

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) {
  if (!g_stop_signal) g_stop_signal = sig;
}

bool ignored(int sig) {
  struct sigaction now {};
  return sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
}

}  // namespace

Interrupted::Interrupted(int signal, bool kept)
    : Error(fmt::format("stopped by {}", signal_name(signal))), signal_(signal), kept_(kept) {}

std::vector<int> stop_signals() {
  std::vector<int> out;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (!ignored(sig)) out.push_back(sig);
  return out;
}

void install_stop_handlers() {
  for (int sig : stop_signals()) std::signal(sig, on_stop_signal);
}

void throw_if_stopped() {
  if (const int sig = g_stop_signal) throw Interrupted(sig);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
    default:
      return fmt::format("signal {}", signal);
  }
}

}  // namespace fedpar
