// `fedpar launch` in processes that a launcher started, not fedpar: with the torchrun variables
// and under Open MPI's mpirun, the job's processes make one run whose model bytes equal those of
// `fedpar run` with as many client processes; a process started without a launcher is told how.
// allreduce.backend = "mpi": the client ranks sum with MPI_Allreduce, whose replicas the server
// checks like the ring's, and a failed check ends the whole MPI job; outside an MPI job the
// backend is refused with how to start one.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "core/dataset.h"
#include "tests/util/run_fedpar.h"
#include "tests/util/run_results.h"
#include "tests/util/test_util.h"
#include "transport/mpi_job.h"

namespace fedpar {
namespace {

using testing::model_hash;
using testing::TempDir;

constexpr const char* kLaunchRun =
    "seed = 5\nregime = 'model'\nrounds = 5\nprocesses = 4\n[data]\nname = 'synthetic'\n"
    "iid = true\n[partition]\nclients = 4\n[local]\nsteps = 2\nbatch = 10\n[optimizer]\n"
    "lr = 0.05\n";

// A TCP port on loopback that nothing listens on now, below Linux's ephemeral range (32768 and
// up): a port the kernel handed out and took back could go to the next socket that binds
// "tcp://127.0.0.1:*" in a test running beside this one before the job binds it.
int free_port() {
  const int start = 20000 + int(::getpid() % 12000);
  for (int k = 0; k < 12000; ++k) {
    const int port = 20000 + (start - 20000 + k) % 12000;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free) return port;
  }
  ADD_FAILURE() << "no free port in 20000 .. 31999";
  return 0;
}

// Runs a bash script; its exit status.
int run_bash(const TempDir& tmp, const std::string& script) {
  std::ofstream(tmp / "job.sh") << script;
  const int status = std::system(("bash " + (tmp / "job.sh").string()).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `fedpar run` of the same config (4 client processes): the bytes a launched job must end with,
// whatever its number of processes.
std::string fedpar_run_hash(const TempDir& tmp) {
  const auto r = testing::run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                                         (tmp / "res").string() + " --set name=local",
                                     tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  return model_hash(tmp / "res" / "local");
}

std::string launch_args(const TempDir& tmp) {
  return "launch " + (tmp / "run.toml").string() +
         " --quiet --set results_dir=" + (tmp / "res").string() + " --set name=launched";
}

TEST(Launch, ProcessesWithTheTorchrunVariablesMakeTheRunFedparRunMakes) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kLaunchRun;
  const int port = free_port();
  // three processes started the way torchrun or a job script starts them: the same command,
  // each with its own RANK
  const int code = run_bash(tmp,
                            "pids=()\nfor r in 0 1 2; do\n  RANK=$r WORLD_SIZE=3 "
                            "MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                                std::to_string(port) + " timeout 120 " + FEDPAR_BIN + " " +
                                launch_args(tmp) + " >/dev/null 2>" + (tmp / "rank").string() +
                                "$r.err &\n  pids+=($!)\ndone\ncode=0\n"
                                "for p in \"${pids[@]}\"; do wait $p || code=$?; done\n"
                                "exit $code\n");
  const std::string server = testing::slurp(tmp / "rank0.err");
  const std::string client = testing::slurp(tmp / "rank2.err");
  ASSERT_EQ(code, 0) << server << client;
  EXPECT_NE(server.find("rank 0 of 3 (torchrun variables): the server for 2 client processes "
                        "(the config said 4), listening on tcp://127.0.0.1:" +
                        std::to_string(port)),
            std::string::npos)
      << server;
  EXPECT_NE(client.find("rank 2 of 3 (torchrun variables): a client process of "
                        "tcp://127.0.0.1:" +
                        std::to_string(port)),
            std::string::npos)
      << client;
  EXPECT_EQ(model_hash(tmp / "res" / "launched"), fedpar_run_hash(tmp));
  // its five evaluated rounds drawn as fedpar run draws them (or, without gnuplot, how to)
  const std::string readme = testing::slurp(tmp / "res/launched/README.md");
  EXPECT_NE(readme.find("accuracy-vs-round.svg"), std::string::npos);
  // and it says how to run it again as it ran
  EXPECT_NE(readme.find(" launch " + (tmp / "res/launched/config.resolved.toml").string() +
                        "` on every rank"),
            std::string::npos)
      << readme;
}

// Every rank reads the config given to it: a rank of another config (another job on the same
// port, or other --set) is refused by the server, not taken in; a rank whose config is wrong
// stops at once; and each rank reads the data from its own --data-dir, not rank 0's (a node's
// path to it is its own).
TEST(Launch, EachRankReadsItsOwnConfigAndDataAndOtherConfigsAreRefused) {
  if (!testing::have_mnist()) GTEST_SKIP() << "MNIST missing: run scripts/setup.sh";
  TempDir tmp;
  std::ofstream(tmp / "run.toml")
      << "seed = 5\nregime = 'model'\nrounds = 3\nprocesses = 2\n[data]\n"
         "name = 'mnist'\ntrain_limit = 600\ntest_limit = 200\n"
         "[partition]\nclients = 4\n[local]\nsteps = 2\nbatch = 10\n";
  // rank 0 in tmp reads tmp/d0; the client ranks, in tmp/node, read node/d1 (no d0 there)
  const auto mnist = std::filesystem::absolute(resolve_data_dir({}));
  std::filesystem::create_directories(tmp / "node");
  std::filesystem::create_directory_symlink(mnist, tmp / "d0");
  std::filesystem::create_directory_symlink(mnist, tmp / "node" / "d1");
  const std::string port = std::to_string(free_port());
  const std::string vars = "WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port;
  const std::string launch =
      std::string(" timeout 120 ") + FEDPAR_BIN + " launch " + (tmp / "run.toml").string() +
      " --quiet --set results_dir=" + (tmp / "res").string() + " --set name=launched --data-dir ";
  const int code = run_bash(
      tmp, "cd " + tmp.path().string() + "\nRANK=0 " + vars + launch + "d0 2>rank0.err &\n" +
               "s=$!\ncd node\nRANK=1 " + vars + launch + "d1 2>rank1.err &\nc=$!\n" +
               // a rank of other settings: refused, while the job waits for its last rank
               "RANK=2 " + vars + launch + "d1 --set local.steps=3 2>other.err\n" +
               "echo $? >other.code\n" +
               // a rank with a config error: stopped before it connects
               "RANK=2 " + vars + launch + "d1 --set local.stepz=3 2>bad.err\n" +
               "echo $? >bad.code\n" + "RANK=2 " + vars + launch + "d1 2>rank2.err\n" +
               "code=$?\nwait $c || code=$?\nwait $s || code=$?\nexit $code\n");
  const std::string server = testing::slurp(tmp / "rank0.err");
  ASSERT_EQ(code, 0) << server << testing::slurp(tmp / "node" / "rank1.err")
                     << testing::slurp(tmp / "node" / "rank2.err");
  const std::string other = testing::slurp(tmp / "node" / "other.err");
  EXPECT_EQ(testing::slurp(tmp / "node" / "other.code"), "2\n") << other;
  EXPECT_NE(other.find("this server runs a job of another config"), std::string::npos) << other;
  const std::string bad = testing::slurp(tmp / "node" / "bad.err");
  EXPECT_EQ(testing::slurp(tmp / "node" / "bad.code"), "2\n") << bad;
  EXPECT_NE(bad.find("local.stepz"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("a client process of"), std::string::npos) << bad;  // it never started
  // the refused rank changed nothing: the job's model is fedpar run's
  EXPECT_EQ(model_hash(tmp / "res" / "launched"), fedpar_run_hash(tmp));
}

// A launched job with checkpoints takes more rounds with --resume on every rank, and ends with
// the bytes of one job of that many rounds.
TEST(Launch, ResumeGivesAFinishedJobMoreRounds) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << "checkpoint_every = 1\n" << kLaunchRun;
  const auto job = [&](const std::string& name, const std::string& flags) {
    const std::string vars =
        "WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port());
    const std::string launch = std::string(" timeout 120 ") + FEDPAR_BIN + " launch " +
                               (tmp / "run.toml").string() +
                               " --quiet --set results_dir=" + (tmp / "res").string() +
                               " --set name=" + name + " " + flags;
    return run_bash(tmp, "pids=()\nfor r in 0 1 2; do\n  RANK=$r " + vars + launch + " 2>" +
                             (tmp / name).string() + "$r.err &\n  pids+=($!)\ndone\ncode=0\n" +
                             "for p in \"${pids[@]}\"; do wait $p || code=$?; done\nexit $code\n");
  };
  ASSERT_EQ(job("five", ""), 0) << testing::slurp(tmp / "five0.err");
  ASSERT_EQ(job("seven", "--set rounds=7"), 0) << testing::slurp(tmp / "seven0.err");
  ASSERT_EQ(job("more", "--set rounds=7 --resume " + (tmp / "res" / "five").string()), 0)
      << testing::slurp(tmp / "more0.err");
  EXPECT_NE(model_hash(tmp / "res" / "more"), model_hash(tmp / "res" / "five"));
  EXPECT_EQ(model_hash(tmp / "res" / "more"), model_hash(tmp / "res" / "seven"));
}

TEST(Launch, MpirunStartsAWholeExperiment) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "Open MPI's mpirun is not installed (scripts/setup.sh installs openmpi-bin)";
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kLaunchRun;
  // --oversubscribe: 3 processes on a 2-core machine; as root, Open MPI wants it said twice
  const int code = run_bash(tmp,
                            "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout "
                            "180 mpirun --oversubscribe -n 3 -x MASTER_PORT=" +
                                std::to_string(free_port()) + " " + FEDPAR_BIN + " " +
                                launch_args(tmp) + " >" + (tmp / "job.out").string() + " 2>&1\n");
  const std::string out = testing::slurp(tmp / "job.out");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("rank 0 of 3 (Open MPI): the server for 2 client processes"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("rank 1 of 3 (Open MPI): a client process"), std::string::npos) << out;
  EXPECT_EQ(model_hash(tmp / "res" / "launched"), fedpar_run_hash(tmp));
  // its five evaluated rounds drawn as fedpar run draws them (or, without gnuplot, how to)
  EXPECT_NE(testing::slurp(tmp / "res/launched/README.md").find("accuracy-vs-round.svg"),
            std::string::npos);
}

// allreduce.backend = "mpi" runs: the allreduce topology on synthetic data, one virtual client
// per process.
constexpr const char* kMpiRun =
    "seed = 3\nregime = 'gradient'\ntopology = 'allreduce'\nrounds = 6\neval_every = 3\n"
    "[data]\nname = 'synthetic'\niid = true\n[model]\nname = '2nn'\n[sgd]\nbatch = 20\n"
    "[optimizer]\nlr = 0.1\n[allreduce]\nhash_every = 1\n";

// `mpirun -n ranks fedpar launch` of `tmp`/mpi.toml with allreduce.backend = "mpi" and `sets`,
// into res/`name`; its exit status, its output in `out`.
int mpirun_launch(const TempDir& tmp, int ranks, const std::string& name, const std::string& sets,
                  std::string& out) {
  const int code = run_bash(
      tmp,
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 180 mpirun "
      "--oversubscribe -n " +
          std::to_string(ranks) + " -x MASTER_PORT=" + std::to_string(free_port()) + " " +
          FEDPAR_BIN + " launch " + (tmp / "mpi.toml").string() +
          " --quiet --set results_dir=" + (tmp / "res").string() + " --set name=" + name +
          " --set allreduce.backend=mpi " + sets + " >" + (tmp / "job.out").string() + " 2>&1\n");
  out = testing::slurp(tmp / "job.out");
  return code;
}

// `fedpar run` of mpi.toml on the zmq-ring with `processes` client processes, into res/`name`.
std::filesystem::path ring_run(const TempDir& tmp, int processes, const std::string& name) {
  const auto r = testing::run_fedpar(
      "run " + (tmp / "mpi.toml").string() + " --set processes=" + std::to_string(processes) +
          " --set partition.clients=" + std::to_string(processes) +
          " --set results_dir=" + (tmp / "res").string() + " --set name=" + name,
      tmp.path());
  EXPECT_EQ(r.code, 0) << r.err;
  return tmp / "res" / name;
}

bool mpi_ready() { return mpi_compiled() && std::system("command -v mpirun >/dev/null 2>&1") == 0; }

TEST(LaunchMpi, TwoRanksSumWhatTheRingSumsBitForBit) {
  if (!mpi_ready()) GTEST_SKIP() << "no MPI (scripts/setup.sh --with-mpi, then rebuild)";
  TempDir tmp;
  std::ofstream(tmp / "mpi.toml") << kMpiRun;
  std::string out;
  ASSERT_EQ(mpirun_launch(tmp, 3, "mpi", "--set partition.clients=2", out), 0) << out;
  EXPECT_NE(out.find("rank 1 of 3 (Open MPI): a client process of tcp://127.0.0.1:"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("; MPI joined on every rank"), std::string::npos) << out;
  // a sum of two is a + b in any order: MPI's and the ring's bytes are the same
  EXPECT_EQ(model_hash(tmp / "res" / "mpi"), model_hash(ring_run(tmp, 2, "ring")));
  for (const auto& m : testing::jsonl(tmp / "res" / "mpi" / "metrics.jsonl"))
    if (m.value("kind", "") == "round") {
      EXPECT_TRUE(m.at("replicas_checked").get<bool>()) << m;
      EXPECT_GT(m.at("workers").at(0).at("allreduce_seconds").get<double>(), 0) << m;
    }
}

TEST(LaunchMpi, FourRanksKeepIdenticalReplicasNearTheRingsModel) {
  if (!mpi_ready()) GTEST_SKIP() << "no MPI (scripts/setup.sh --with-mpi, then rebuild)";
  TempDir tmp;
  std::ofstream(tmp / "mpi.toml") << kMpiRun;
  std::string out;
  // every round's replica check passes, or the job fails
  ASSERT_EQ(mpirun_launch(tmp, 5, "mpi", "--set partition.clients=4", out), 0) << out;
  // four terms summed in MPI's order, not the ring's: the same model up to float rounding
  const double d = testing::relative_distance(testing::final_params(tmp / "res" / "mpi"),
                                              testing::final_params(ring_run(tmp, 4, "ring")));
  EXPECT_LT(d, 1e-5);
}

TEST(LaunchMpi, DriftingReplicasEndTheWholeJob) {
  if (!mpi_ready()) GTEST_SKIP() << "no MPI (scripts/setup.sh --with-mpi, then rebuild)";
  TempDir tmp;
  std::ofstream(tmp / "mpi.toml") << kMpiRun;
  std::string out;
  // rank 1 flips a bit after round 1: the server stops, and MPI_Abort takes down the client
  // ranks that would otherwise wait in their next MPI_Allreduce (timeout 180 s would say so)
  const int code = mpirun_launch(
      tmp, 4, "drift", "--set partition.clients=3 --set allreduce.fault_flip_rank=1", out);
  EXPECT_EQ(code, kExitRunFailed) << "124: the job hung\n"
                                  << out;  // the server's code, through MPI_Abort
  EXPECT_NE(out.find("round 1: the replicas drifted apart"), std::string::npos) << out;
  EXPECT_NE(out.find("(worker(s) 1)"), std::string::npos) << out;
}

TEST(LaunchMpi, RanksBlockedInASumEndWithTheServer) {
  if (!mpi_ready()) GTEST_SKIP() << "no MPI (scripts/setup.sh --with-mpi, then rebuild)";
  TempDir tmp;
  std::ofstream(tmp / "mpi.toml") << kMpiRun;
  std::string out;
  // client 0 takes 60 s per step: the other ranks wait for it inside MPI_Allreduce, the server
  // gives up after wait_seconds = 3, and its MPI_Abort must take the blocked ranks down with it
  const auto t0 = std::chrono::steady_clock::now();
  const int code = mpirun_launch(tmp, 4, "stuck",
                                 "--set partition.clients=3 --set wait_seconds=3 "
                                 "--set stragglers.delay_seconds=0:60",
                                 out);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(code, kExitRunFailed) << out;
  EXPECT_NE(out.find("round 1: no report from worker "), std::string::npos) << out;
  EXPECT_LT(seconds, 40) << "the job waited for the straggler\n" << out;
}

TEST(LaunchMpi, OutsideAnMpiJobItSaysHowToStartOne) {
  TempDir tmp;
  std::ofstream(tmp / "mpi.toml") << kMpiRun;
  // fedpar run starts its processes itself: MPI's launcher must
  auto r = testing::run_fedpar(
      "run " + (tmp / "mpi.toml").string() + " --set processes=2 --set allreduce.backend=mpi",
      tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mpirun -n 3 fedpar launch CONFIG"), std::string::npos) << r.err;
  // nor does a server started by hand: it says so before it waits for any client
  r = testing::run_fedpar("server --config " + (tmp / "mpi.toml").string() +
                              " --set bind=tcp://127.0.0.1:* --set allreduce.backend=mpi",
                          tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("this server is no rank of an MPI job"), std::string::npos) << r.err;
  // the torchrun variables start no MPI job: their rank 0 says so at once
  const int code =
      run_bash(tmp, "RANK=0 WORLD_SIZE=2 MASTER_PORT=" + std::to_string(free_port()) +
                        " timeout 60 " + FEDPAR_BIN + " launch " + (tmp / "mpi.toml").string() +
                        " --set allreduce.backend=mpi 2>" + (tmp / "err").string() + "\n");
  const std::string err = testing::slurp(tmp / "err");
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("this server is no rank of an MPI job"), std::string::npos) << err;
}

TEST(Launch, WithoutALauncherItSaysHowToStartIt) {
  TempDir tmp;
  std::ofstream(tmp / "run.toml") << kLaunchRun;
  const auto r = testing::run_fedpar(launch_args(tmp), tmp.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no launcher's variables are set"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mpirun -n N"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "res" / "launched"));
}

}  // namespace
}  // namespace fedpar
