// The MPI entry points of a build without MPI: they say how to get it.
#include <cstdlib>

#include "core/check.h"
#include "transport/mpi_job.h"

namespace fedpar {
namespace {

[[noreturn]] void no_mpi() {
  throw Error(
      "allreduce.backend = \"mpi\": this fedpar was built without MPI (no MPI headers at "
      "configure time): bash scripts/setup.sh --with-mpi, then rebuild");
}

}  // namespace

bool mpi_compiled() { return false; }
MpiJob::MpiJob(int, int) { no_mpi(); }
MpiJob::~MpiJob() = default;
void MpiJob::abort(int code) { std::_Exit(code); }
bool mpi_job_active() { return false; }
void mpi_allreduce_clients(std::span<float>) { no_mpi(); }

}  // namespace fedpar
