// The stop flag; see stop_signal.h.
#include "core/stop_signal.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

namespace fedpar {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) {
  if (!g_stop_signal) g_stop_signal = sig;
}

// The lines a process says as it dies of a stop signal, made before any arrives: a handler may
// only write(2) what is ready, in storage that outlives every destructor.
char g_last_words[3][128];  // SIGINT, SIGTERM, SIGHUP
size_t g_last_words_size[3];
int last_words_slot(int sig) { return sig == SIGINT ? 0 : sig == SIGTERM ? 1 : 2; }
void say_and_die(int sig) {
  const int k = last_words_slot(sig);
  [[maybe_unused]] const auto n = ::write(2, g_last_words[k], g_last_words_size[k]);
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
    const int k = last_words_slot(sig);
    g_last_words_size[k] = fmt::format_to_n(g_last_words[k], sizeof g_last_words[k],
                                            "{}: stopped by {}\n", who, signal_name(sig))
                               .size;
    g_last_words_size[k] = std::min(g_last_words_size[k], sizeof g_last_words[k]);
    std::signal(sig, say_and_die);
  }
}

void throw_if_stopped() {
  if (const int sig = g_stop_signal) throw Interrupted(sig);
}

bool stop_requested() { return g_stop_signal != 0; }

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
