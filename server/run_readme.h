// The README.md of a distributed run's results folder: what ran, how it ended and the command
// that repeats it, and what each file holds, written from the run's own config and summary.
#pragma once

#include <filesystem>
#include <string>

#include "core/config.h"
#include "core/run_records.h"
#include "core/run_spec.h"

namespace fedpar {

// `dir` is the folder as it will be committed (the files it lists are the ones present);
// `plots` the markdown that shows the run's plots, or says why it has none.
std::string run_readme(const Config& cfg, const RunSpec& s, const RunSummary& summary,
                       const std::filesystem::path& dir, const std::string& plots = "");

// A pipeline's or tensor group's README line: how the model was split, and each process's
// parameters, activations and link bytes in round f ("" for other topologies).
std::string split_line(const RunSpec& s, const RoundRecord& f);

// A codec run's sizes on the wire beside the model's `parameters` in float32, from the round `f`
// (its clients' UPDATEs, whole messages, and the TASK's model frame): "" without a codec or
// per-client records. An allreduce run's: what each worker sent around the ring, codec or none.
std::string compression_line(const RunSpec& s, const RoundRecord& f, uint64_t parameters);

}  // namespace fedpar
