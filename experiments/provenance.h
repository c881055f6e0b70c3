// What made a report that spans runs (a suite, the equivalence experiment): the build and the
// machine, as each run's summary.json records them, since the digits depend on both.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fedpar {

// {"source_commit" (where the executable set one), "build_vector_units", "blas_kernels",
// "machine", "load_average" (where known)}.
nlohmann::json provenance_json();
// "Made by fedpar abc1234 (AVX-512, OpenBLAS Cooperlake kernels) on 2 cores, AMD EPYC ...; load
// 1.20 at the end.": the line a report ends with.
std::string provenance_line();

}  // namespace fedpar
