// MpiJob and the client ranks' sum over MPI; see mpi_job.h. (transport/no_mpi.cc without MPI.)
#include "transport/mpi_job.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/check.h"

namespace fedpar {
namespace {

MPI_Comm g_clients = MPI_COMM_NULL;  // the client ranks' communicator (null on the server)
bool g_active = false;

std::string mpi_words(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, size_t(len));
}

}  // namespace

bool mpi_compiled() { return true; }

MpiJob::MpiJob(int rank, int size) {
  FEDPAR_CHECK(!g_active) << "one MPI job per process";
  // without a launcher MPI_Init would start a job of one process (a "singleton") no other joins
  FEDPAR_CHECK(started_by_mpi_launcher()) << "an MpiJob outside an MPI launcher's job";
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  // failures come back as codes (and become Errors naming them), not as MPI's own abort
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  if (mpi_rank != rank || mpi_size != size)
    throw Error(fmt::format(
        "MPI says this is rank {} of {}, the launcher's variables rank {} of {}: under an MPI "
        "launcher leave RANK and WORLD_SIZE unset",
        mpi_rank, mpi_size, rank, size));
  if (provided < MPI_THREAD_SERIALIZED)
    throw Error(
        "this MPI does not provide MPI_THREAD_SERIALIZED (calls from one thread at a time, not "
        "always the one that initialised it)");
  // the server (rank 0) sits out: MPI_UNDEFINED leaves it without the communicator
  const int rc = MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 0, rank, &g_clients);
  if (rc != MPI_SUCCESS) throw Error(fmt::format("MPI_Comm_split failed: {}", mpi_words(rc)));
  g_active = true;
}

MpiJob::~MpiJob() {
  if (!g_active) return;
  if (g_clients != MPI_COMM_NULL) MPI_Comm_free(&g_clients);
  g_active = false;
  MPI_Finalize();
}

void MpiJob::abort(int code) {
  // Open MPI's mpirun ends the whole job when a rank exits non-zero; its MPI_Abort (4.1) can hang
  // mpirun itself while it prints its help text ("Data unpack had inadequate space", seen here
  // under load), so under mpirun the exit is the abort. Elsewhere (srun) MPI_Abort.
  if (!std::getenv("OMPI_COMM_WORLD_SIZE")) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

bool mpi_job_active() { return g_active; }

void mpi_allreduce_clients(std::span<float> data) {
  if (g_clients == MPI_COMM_NULL)
    throw Error("allreduce.backend = \"mpi\": this process is no client rank of an MPI job");
  // MPI's counts are ints; messages past 2 GiB trouble some of Open MPI's transports
  constexpr size_t kMaxCount = size_t(1) << 28;
  for (size_t at = 0; at < data.size(); at += kMaxCount) {
    const int n = int(std::min(kMaxCount, data.size() - at));
    const int rc = MPI_Allreduce(MPI_IN_PLACE, data.data() + at, n, MPI_FLOAT, MPI_SUM, g_clients);
    if (rc != MPI_SUCCESS) throw Error(fmt::format("MPI_Allreduce failed: {}", mpi_words(rc)));
  }
}

}  // namespace fedpar
