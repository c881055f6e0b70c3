// `fedpar launch CONFIG`: one process of a job that a cluster launcher started (mpirun, srun, or
// the torchrun variables; experiments/launch_env.h). Rank 0 runs the server for the job's other
// ranks, which are its client processes; the launcher, not fedpar, starts and stops them.
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "clients/client.h"
#include "core/check.h"
#include "core/dataset.h"
#include "core/run_spec.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/data_flags.h"
#include "experiments/equivalence.h"
#include "experiments/launch_env.h"
#include "experiments/run_plots.h"
#include "server/server.h"
#include "transport/mpi_job.h"

namespace fedpar {
Action add_launch_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "launch",
      "one process of a job started by mpirun, srun or the torchrun variables (RANK, "
      "WORLD_SIZE, MASTER_ADDR, MASTER_PORT): rank 0 runs the server, every other rank a client "
      "process");
  cmd->footer(
      "Example: mpirun -n 5 fedpar launch experiments/fedavg-mnist-2nn.toml (a server and 4 "
      "client processes).\nThe server listens on MASTER_ADDR:MASTER_PORT, else on the first host "
      "of SLURM_STEP_NODELIST (under srun) or SLURM_JOB_NODELIST, else on 127.0.0.1; the port is "
      "29500 unless MASTER_PORT says "
      "otherwise.\nThe config's `processes` becomes the job's size less one. See docs/cluster.md.");
  struct Args {
    std::string config;
    std::vector<std::string> sets, flag_sets;
    std::string device, resume;
    double wait_seconds = 300;
    bool quiet = false, no_plots = false;
  };
  auto a = std::make_shared<Args>();
  add_run_config_args(cmd, a->config, a->sets, a->flag_sets);
  cmd->add_option("--device", a->device, "the client processes' device: cpu or cuda");
  cmd->add_option("--wait", a->wait_seconds, "seconds a client waits for the server")
      ->capture_default_str();
  cmd->add_option("--resume", a->resume,
                  "continue the run whose results folder DIR holds checkpoint.bin (rank 0 reads "
                  "it; start every rank with the same command)");
  cmd->add_flag("--quiet", a->quiet, "no progress from the server on stderr");
  cmd->add_flag("--no-plots", a->no_plots, kNoPlotsHelp);
  return [a] {
    if (is_equivalence_config(a->config))
      throw Error(
          fmt::format("{} is the equivalence experiment, whose variants are separate runs: "
                      "run it with fedpar run",
                      a->config));
    const LaunchEnv env = read_launch_env(std::getenv);
    // Every rank reads the config as given to it: a mistake stops each rank at once (not a
    // client waiting out --wait for a server that never came), and its hash, sent in HELLO,
    // keeps a rank of another job (or of other flags) out of this one.
    Config cfg = make_run_config();
    cfg.merge_file(a->config);
    cfg.set_all(flags_then_sets(a->flag_sets, a->sets));
    const int64_t config_processes = cfg.get_int("processes");
    cfg.set("processes", std::to_string(env.world_size - 1));  // the job's size sets it
    const RunSpec mine = resolve_run_spec(cfg);
    // Under an MPI launcher every rank joins MPI, whatever the backend.
    std::optional<MpiJob> mpi;
    if (mpi_compiled() && started_by_mpi_launcher()) mpi.emplace(env.rank, env.world_size);
    if (env.rank > 0) {
      ClientOptions o;
      o.server = server_connect_endpoint(env);
      o.device = a->device;
      // each node's own data: this rank's --data-dir (or config), else its FEDPAR_DATA_DIR,
      // ./data, the source tree's; never rank 0's path, which may not exist here
      o.data_dir = resolve_data_dir(mine.data.data_dir).string();
      o.run_config = run_config_hash(cfg);
      o.wait_seconds = a->wait_seconds;
      o.quiet = true;  // one progress display per job: the server's
      fmt::print(stderr, "fedpar launch: rank {} of {} ({}): a client process of {}\n", env.rank,
                 env.world_size, env.launcher, o.server);
      // printed here, before ~MpiJob: a failed client then waits in MPI_Finalize for the server
      const int code = run_action("launch", [&] { return run_client(o); });
      // a launcher may stop the whole job on a rank's failure: the server's rank, which ended
      // the run and is still writing its results, is the one whose exit says how it ended
      if (code == kExitEndedByServer)
        fmt::print(stderr,
                   "fedpar launch: rank {}: the server ended the run before it completed (rank "
                   "0's output and exit code say why)\n",
                   env.rank);
      return code == kExitEndedByServer ? 0 : code;
    }
    cfg.set("bind", server_bind_endpoint(env));
    if (mine.security.on())
      throw Error(
          "[security] needs a key pair per client process; start the processes "
          "with fedpar server and fedpar client --key (docs/distributed.md)");
    fmt::print(stderr,
               "fedpar launch: rank 0 of {} ({}): the server for {} client process{}{}, "
               "listening on {}; the clients connect to {} (host from {}){}\n",
               env.world_size, env.launcher, env.world_size - 1, env.world_size == 2 ? "" : "es",
               config_processes == env.world_size - 1
                   ? ""
                   : fmt::format(" (the config said {})", config_processes),
               server_bind_endpoint(env), server_connect_endpoint(env), env.host_from,
               mpi ? "; MPI joined on every rank" : "");
    ServerOptions opts;
    opts.quiet = a->quiet;
    opts.under_launch = true;
    opts.launch_config = run_config_hash(cfg);
    opts.resume = a->resume;
    if (!a->no_plots) opts.draw_plots = draw_run_plots;
    const int code = run_action("launch", [&] { return run_server(std::move(cfg), opts); });
    // a failed run ends the MPI job (client ranks may be blocked in a sum), its reason printed
    if (mpi && code != 0) mpi->abort(code);
    return code;
  };
}

}  // namespace fedpar
