// One distributed run on this machine: a `fedpar server` process and P `fedpar client` processes,
// supervised. If a client process dies the run follows its fault policy (model averaging goes on
// without it; otherwise the others are stopped and the run fails naming it); Ctrl-C stops
// them all. Used by `fedpar run` and by experiments made of several runs.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "core/config.h"
#include "core/run_spec.h"

namespace fedpar {

// The environment variable that names the supervising `fedpar run` to its children: a child that
// finds it asks the kernel for SIGTERM when that process dies, so a killed supervisor leaves no
// server or client behind.
inline constexpr const char* kSupervisorPidVariable = "FEDPAR_SUPERVISOR_PID";
// The file in which the supervisor writes why it stops the server (a client process died), read
// by the server it stops so that its kept folder says that, not the SIGTERM it was sent.
inline constexpr const char* kStopReasonVariable = "FEDPAR_STOP_REASON_FILE";
// Called first in every fedpar process: honours kSupervisorPidVariable.
void follow_supervisor();

struct LocalRunOptions {
  std::string bind;    // empty: tcp://127.0.0.1:* (a free port)
  bool quiet = false;  // the server prints neither round lines nor its result lines
  std::string resume;  // a run folder with checkpoint.bin: the server continues that run
  bool plots = true;   // the server draws the run's plots into its folder (experiments made of
                       // runs, which draw their own, turn it off)
  // A run that fails or is stopped keeps its rounds as NAME.incomplete; experiments made of runs,
  // whose own folder goes when one fails, turn it off (or the server would name a folder that
  // is about to go).
  bool keep_incomplete = true;
  // The equivalence experiment ends with "results: DIR"; within a suite, whose folder is moved
  // into place at its end (and says so), DIR would name a folder about to go.
  bool say_results_dir = true;
};

// Runs the (validated) run config `cfg`. Returns the server's exit code, 1 when a client process
// failed, 128 + the signal when interrupted (130: SIGINT). Throws Error when the processes cannot
// be started.
int run_locally(Config cfg, const LocalRunOptions& opts);

// The stop signal (SIGINT, SIGTERM, SIGHUP) a run_locally of this process received; 0: none.
int run_interrupted_by();

// `cfg` without its tables `sections`, as a config of `base`'s keys: by default the plain run
// config (what `fedpar server` accepts) inside an experiment's config.
Config config_without(const Config& cfg, std::initializer_list<std::string_view> sections,
                      Config base = make_run_config());

}  // namespace fedpar
