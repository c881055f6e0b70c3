// Reading a launcher's environment: each launcher's rank and size, which wins when several are
// set, where the server listens, Slurm's node lists, and the errors a misstarted job gets.
#include "experiments/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/check.h"

namespace fedpar {
namespace {

LaunchEnv read(const std::map<std::string, std::string>& vars) {
  return read_launch_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    read(vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchEnv, ReadsEachLaunchersRankAndSize) {
  auto t = read({{"RANK", "2"}, {"WORLD_SIZE", "5"}});
  EXPECT_EQ(t.launcher, "torchrun variables");
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.world_size, 5);
  auto m = read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}});
  EXPECT_EQ(m.launcher, "Open MPI");
  EXPECT_EQ(m.rank, 0);
  EXPECT_EQ(m.world_size, 3);
  auto s = read({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}});
  EXPECT_EQ(s.launcher, "Slurm");
  EXPECT_EQ(s.rank, 7);
  EXPECT_EQ(s.world_size, 8);
}

// mpirun inside an sbatch script: every rank inherits the batch shell's SLURM_PROCID=0, so Open
// MPI's rank must win, or every process would think it is the server.
TEST(LaunchEnv, OpenMpisRankWinsOverTheBatchShellsSlurmRank) {
  auto e = read({{"SLURM_PROCID", "0"},
                 {"SLURM_NTASKS", "1"},
                 {"OMPI_COMM_WORLD_RANK", "3"},
                 {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(e.launcher, "Open MPI");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  // and RANK / WORLD_SIZE, set on purpose, win over both
  auto t = read({{"RANK", "1"},
                 {"WORLD_SIZE", "2"},
                 {"OMPI_COMM_WORLD_RANK", "3"},
                 {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(t.launcher, "torchrun variables");
  EXPECT_EQ(t.rank, 1);
}

TEST(LaunchEnv, TheServersHostComesFromMasterAddrThenTheNodeListThenLoopback) {
  const std::map<std::string, std::string> base = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "8"}};
  auto vars = base;
  EXPECT_EQ(read(vars).server_host, "127.0.0.1");
  EXPECT_EQ(read(vars).host_from, "default");
  EXPECT_EQ(read(vars).port, 29500);
  vars["SLURM_JOB_NODELIST"] = "gpu[07-08],login1";
  EXPECT_EQ(read(vars).server_host, "gpu07");
  EXPECT_EQ(read(vars).host_from, "SLURM_JOB_NODELIST");
  // srun's step on part of the allocation starts rank 0 on the step's first node
  vars["SLURM_STEP_NODELIST"] = "gpu08";
  EXPECT_EQ(read(vars).server_host, "gpu08");
  EXPECT_EQ(read(vars).host_from, "SLURM_STEP_NODELIST");
  // under mpirun (in an sbatch script) rank 0 is on the allocation's first node, and a rank on
  // another node sees the step of mpirun's daemons, without that node
  auto mpi = vars;
  mpi.erase("SLURM_PROCID"), mpi.erase("SLURM_NTASKS");
  mpi["OMPI_COMM_WORLD_RANK"] = "3", mpi["OMPI_COMM_WORLD_SIZE"] = "8";
  EXPECT_EQ(read(mpi).server_host, "gpu07");
  // a job script under srun that exports RANK and WORLD_SIZE is still srun's step
  auto script = vars;
  script["RANK"] = "1", script["WORLD_SIZE"] = "8";
  EXPECT_EQ(read(script).server_host, "gpu08");
  vars["MASTER_ADDR"] = "10.1.2.3";
  vars["MASTER_PORT"] = "6001";
  EXPECT_EQ(read(vars).server_host, "10.1.2.3");
  EXPECT_EQ(read(vars).host_from, "MASTER_ADDR");
  EXPECT_EQ(read(vars).port, 6001);
}

TEST(LaunchEnv, FirstSlurmHostExpandsTheFirstRange) {
  EXPECT_EQ(first_slurm_host("node5"), "node5");
  EXPECT_EQ(first_slurm_host("c1,c2"), "c1");
  EXPECT_EQ(first_slurm_host("gpu[07-10,12],login1"), "gpu07");
  EXPECT_EQ(first_slurm_host("n[003]"), "n003");
  EXPECT_EQ(first_slurm_host("n[4,1-2]"), "n4");
  EXPECT_EQ(first_slurm_host("rack[2-3]-ib,x"), "rack2-ib");
  EXPECT_THROW(first_slurm_host("bad[]"), Error);
}

TEST(LaunchEnv, RankZeroBindsAnAddressOrEveryInterfaceForAHostName) {
  LaunchEnv e;
  e.server_host = "127.0.0.1";
  e.port = 29500;
  EXPECT_EQ(server_bind_endpoint(e), "tcp://127.0.0.1:29500");
  EXPECT_EQ(server_connect_endpoint(e), "tcp://127.0.0.1:29500");
  e.server_host = "gpu07";
  EXPECT_EQ(server_bind_endpoint(e), "tcp://*:29500");
  EXPECT_EQ(server_connect_endpoint(e), "tcp://gpu07:29500");
  e.server_host = "::1";
  EXPECT_EQ(server_bind_endpoint(e), "tcp://[::1]:29500");
}

TEST(LaunchEnv, AMisstartedJobIsToldWhatIsWrong) {
  EXPECT_NE(error_of({}).find("mpirun -n N"), std::string::npos) << error_of({});
  EXPECT_NE(error_of({{"RANK", "1"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "4"}}).find("RANK='x' is not a whole number"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "1 "}, {"WORLD_SIZE", "4"}}).find("not a whole number"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("RANK=4 is outside a job of"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).find("at least 2 processes"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT=70000 is not a TCP port"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
