// All-reduce bandwidth of fedpar's ring (transport/ring_allreduce over ZeroMQ TCP on loopback) with
// N worker processes, as NCCL-tests report it: time per all-reduce (median over --reps), algorithm
// bandwidth algbw = bytes / time and bus bandwidth busbw = algbw * 2 (N - 1) / N. One JSON line per
// size (--json) for bench/allreduce_compare.py, which runs torch.distributed's gloo beside it.
// Usage: bench_allreduce --workers 4 --floats 1000,100000,1000000,4000000 [--reps 20]
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/pipe_lines.h"
#include "core/check.h"
#include "core/median.h"
#include "transport/ring_allreduce.h"
#include "transport/zmq_ring_link.h"

namespace fedpar {
namespace {

// A line through a pipe (endpoints between the parent and the workers).
// One worker process: binds, reports its endpoint, learns the next one's, then times the sizes.
int worker(int rank, int n, int to_parent, int from_parent, const std::vector<size_t>& sizes,
           int reps, size_t bucket, bool json) {
  zmq::context_t ctx;
  ZmqRingLink link(ctx, "tcp://127.0.0.1:*", 30.0);
  write_line(to_parent, link.endpoint());
  link.connect_next({read_line(from_parent)});
  std::vector<float> barrier(size_t(n), 0.0f);
  for (size_t floats : sizes) {
    std::vector<float> data(floats, float(rank + 1));
    std::vector<double> secs;
    for (int r = -2; r < reps; ++r) {          // two warm-up rounds
      ring_allreduce(barrier, rank, n, link);  // start together
      const auto t0 = std::chrono::steady_clock::now();
      ring_allreduce(data, rank, n, link, bucket);
      const double dt =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0) secs.push_back(dt);
    }
    // Every worker's time counts: the slowest worker's median is the all-reduce's.
    std::vector<float> t = {float(median(secs))};
    std::vector<float> all(size_t(n), 0.0f);
    all[size_t(rank)] = t[0];
    ring_allreduce(all, rank, n, link);
    if (rank != 0) continue;
    const double time = *std::max_element(all.begin(), all.end());
    const double bytes = double(floats) * sizeof(float);
    const double algbw = bytes / time / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
    if (json) {
      fmt::print("{}\n", nlohmann::json{{"side", "fedpar-ring"},
                                        {"workers", n},
                                        {"floats", floats},
                                        {"seconds", time},
                                        {"algbw_GBps", algbw},
                                        {"busbw_GBps", busbw}}
                             .dump());
    } else {
      fmt::print("{:>4} {:>10} {:>12.1f} {:>10.3f} {:>10.3f}\n", n, floats, time * 1e6, algbw,
                 busbw);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace fedpar

int main(int argc, char** argv) {
  using namespace fedpar;
  CLI::App app{"fedpar ring all-reduce bandwidth (worker processes over TCP loopback)"};
  int n = 4, reps = 20;
  std::vector<size_t> sizes = {1000, 100000, 1000000, 4000000};
  size_t bucket = size_t(1) << 20;  // the allreduce topology's default (allreduce.bucket_floats)
  bool json = false;
  app.add_option("--workers", n, "worker processes")->check(CLI::Range(2, 64));
  app.add_option("--floats", sizes, "vector lengths")->delimiter(',');
  app.add_option("--reps", reps, "timed all-reduces per size (median)");
  app.add_option("--bucket", bucket, "floats per bucket")->capture_default_str();
  app.add_flag("--json", json, "JSON lines");
  CLI11_PARSE(app, argc, argv);
  if (!json)
    fmt::print("{:>4} {:>10} {:>12} {:>10} {:>10}\n", "N", "floats", "time (us)", "algbw GB/s",
               "busbw GB/s");
  std::fflush(stdout);
  std::vector<int> up(static_cast<size_t>(n)), down(static_cast<size_t>(n));
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    int a[2], b[2];
    FEDPAR_CHECK(::pipe(a) == 0 && ::pipe(b) == 0) << "pipe";
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(a[0]);
      ::close(b[1]);
      try {
        ::_exit(worker(r, n, a[1], b[0], sizes, reps, bucket, json));
      } catch (const std::exception& e) {
        fmt::print(stderr, "bench_allreduce: worker {}: {}\n", r, e.what());
        ::_exit(1);
      }
    }
    ::close(a[1]);
    ::close(b[0]);
    up[size_t(r)] = a[0];
    down[size_t(r)] = b[1];
    pids.push_back(pid);
  }
  std::vector<std::string> endpoints;
  for (int r = 0; r < n; ++r) endpoints.push_back(read_line(up[size_t(r)]));
  for (int r = 0; r < n; ++r) write_line(down[size_t(r)], endpoints[size_t((r + 1) % n)]);
  int rc = 0;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  return rc;
}
