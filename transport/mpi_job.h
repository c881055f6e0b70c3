// MPI under `fedpar launch` (for allreduce.backend = "mpi"): the processes an MPI launcher started
// (mpirun, srun with PMIx) initialise MPI together; rank 0, the server, takes no part in the sums,
// so the client ranks get a communicator of their own, ordered by their rank in the job, over
// which each AllReduceWorker sums its gradients with MPI_Allreduce.
// Replicas stay bitwise identical as long as every rank gets the same bits from MPI_Allreduce:
// Open MPI's algorithms compute each element's sum once and copy it (ring, Rabenseifner) or add
// the same two operands on both sides of an exchange (recursive doubling). The server's replica
// hash check holds any MPI to it.
#pragma once

#include <cstdlib>
#include <span>

namespace fedpar {

// Whether this fedpar was built with MPI (MPI's headers found at configure time).
bool mpi_compiled();
// Whether an MPI launcher started this process (mpirun's OMPI_COMM_WORLD_SIZE, PMIx's or PMI's
// rank): `fedpar launch` then makes an MpiJob on every rank, whatever the backend, so that the
// ranks agree without reading the config (the client ranks get it from the server).
inline bool started_by_mpi_launcher() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

// The job's MPI, from MPI_Init_thread to MPI_Finalize. Collective: every process of the job makes
// one, rank 0 (the server) too, and only when started_by_mpi_launcher(). Throws Error when MPI's
// rank and size are not the launcher's variables' (`rank`, `size`).
class MpiJob {
 public:
  MpiJob(int rank, int size);
  // MPI_Finalize, which returns once every rank has come to it (a failed client waits there for
  // the server to end the job).
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;
  // A failed server ends the whole job, ranks blocked in a sum with it: exits `code` (mpirun then
  // stops every rank), or MPI_Abort under other launchers.
  [[noreturn]] void abort(int code);
};

// Whether this process holds an MpiJob.
bool mpi_job_active();

// Sums `data` element-wise over the job's client ranks, in place (float32, MPI_SUM); every client
// rank calls it with the same length. Throws Error without an MpiJob, or with MPI's words when
// MPI fails.
void mpi_allreduce_clients(std::span<float> data);

}  // namespace fedpar
