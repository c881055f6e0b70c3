// The natural scheme's partition.clients = 0 (one client per user), made a number before a run
// starts. Apart from run_spec so that resolving a spec never loads data (the config fuzzer links
// the spec alone).
#pragma once

#include "core/config.h"
#include "core/run_spec.h"

namespace fedpar {

// resolve_run_spec for the run that starts: first, partition.clients = 0 of the natural scheme is
// replaced in `c` by the data's count of users, so that everything reading the client count (lr
// scaling, async steps, network mixtures and profiles, attack and robust checks, the clients'
// WELCOME) sees the real one.
RunSpec resolve_run_spec_counting_users(Config& c);

}  // namespace fedpar
