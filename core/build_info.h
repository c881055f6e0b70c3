// What made a result: the source commit the running fedpar was built from and the machine it runs
// on. A run's bytes depend on both (float sums differ with and without AVX-512, and with the
// kernels OpenBLAS picks for the CPU), so its results folder records them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fedpar {

// The fedpar executable sets its build's commit at start ("abc1234", with " + uncommitted changes"
// when the tree differed from it); other programs (tests, benchmarks) leave it empty.
void set_source_commit(std::string_view commit);
const std::string& source_commit();

// The widest x86 vector instructions this build compiles for ("AVX-512", "AVX2", "SSE2", or
// "not x86"): with FEDPAR_NATIVE, the building machine's; its float sums follow them.
const char* build_vector_units();

// The kernels OpenBLAS chose for this CPU ("OpenBLAS Haswell kernels"; "Eigen, no OpenBLAS" in a
// build without it). It chooses by CPU model, not by vector units: two AVX-512 CPUs (a Zen 4 and
// a Zen 5 EPYC) ran other kernels and gave other bytes from one commit, so results record it.
std::string blas_kernels();

// "abc1234 (AVX-512, OpenBLAS Cooperlake kernels)": the commit, vector units and kernels together,
// what a process's bytes depend on ("(commit unknown)" where none was set).
std::string build_description();

// "2 cores, AMD EPYC 9B14 (family 25 model 17, avx512f), Debian GNU/Linux 12 (bookworm)": what
// scripts/provenance.sh's machine() writes, read from /proc/cpuinfo and /etc/os-release ("unknown"
// where they are absent).
std::string machine_description();

// The machine's load average over the last minute (/proc/loadavg; none where it is absent): other
// work on the machine slows what a run times, so results record it beside the times.
std::optional<double> load_average();

}  // namespace fedpar
