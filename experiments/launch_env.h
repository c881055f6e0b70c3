// Where this process stands in a job that a cluster launcher started, read from the variables the
// launcher sets: the torchrun convention (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), Open MPI's
// mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE) or Slurm's srun (SLURM_PROCID,
// SLURM_NTASKS, SLURM_JOB_NODELIST). `fedpar launch` makes rank 0 the server and every other rank
// a client process, so a cluster runs fedpar with the launcher it already has.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace fedpar {

struct LaunchEnv {
  std::string launcher;     // "torchrun variables", "Open MPI" or "Slurm": whose rank was read
  int rank = 0;             // 0: the server; 1 .. world_size - 1: client processes
  int world_size = 0;       // every process of the job, the server included
  std::string server_host;  // where rank 0 listens and the others connect
  std::string host_from;    // which variable named server_host ("default" when none did)
  int port = 29500;         // MASTER_PORT, else torchrun's default
};

// getenv's signature, so tests can pass their own environment.
using Getenv = std::function<const char*(const char*)>;

// Reads the environment. Precedence: RANK/WORLD_SIZE (set on purpose), then Open MPI's (mpirun
// inside a Slurm allocation passes the batch shell's SLURM_PROCID to every rank), then Slurm's.
// The server's host: MASTER_ADDR, else under srun the first host of SLURM_STEP_NODELIST (where
// the step's rank 0 runs), else the first host of SLURM_JOB_NODELIST (rank 0 runs there under
// mpirun, and under srun with the whole allocation), else 127.0.0.1. Throws Error naming the
// variable when none is set, a value is not a number, the rank is outside the job, or the job has
// fewer than 2 processes.
LaunchEnv read_launch_env(const Getenv& getenv);

// The first host of a Slurm node list: "gpu[07-10,12],login1" -> "gpu07".
std::string first_slurm_host(std::string_view nodelist);

// The endpoint rank 0 binds: the host itself when it is a loopback or numeric address, every
// interface otherwise (a host name is how the others reach it, not an address to bind).
std::string server_bind_endpoint(const LaunchEnv& env);

// The endpoint the client processes connect to.
std::string server_connect_endpoint(const LaunchEnv& env);

}  // namespace fedpar
