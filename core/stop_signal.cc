// The stop flag; see stop_signal.h.
#include "core/stop_signal.h"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) {
  if (!g_stop_signal) g_stop_signal = sig;
}

// The lines a process says as it dies of a stop signal, made before any arrives: a handler may
// only write(2) what is ready.
std::string g_last_words[3];  // SIGINT, SIGTERM, SIGHUP
int last_words_slot(int sig) { return sig == SIGINT ? 0 : sig == SIGTERM ? 1 : 2; }
void say_and_die(int sig) {
  const std::string& line = g_last_words[last_words_slot(sig)];
  [[maybe_unused]] const auto n = ::write(2, line.data(), line.size());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
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

void install_last_words(const std::string& who) {
  for (int sig : stop_signals()) {
    g_last_words[last_words_slot(sig)] = fmt::format("{}: stopped by {}\n", who, signal_name(sig));
    std::signal(sig, say_and_die);
  }
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
