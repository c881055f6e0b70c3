// Partitioning speed: milliseconds to split 60,000 MNIST-shaped labels among 100 clients, per
// scheme (median of 7 runs, each including the manifest's sort, histograms and hash).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "core/partition_params.h"
#include "core/rng.h"
#include "partitioners/partition.h"

int main(int argc, char** argv) {
  using namespace fedpar;
  if (argc > 1) {  // it takes no options: --help (or anything) says what it does, not runs it
    fmt::print(
        "bench_partition: milliseconds to split 60,000 MNIST-shaped labels among 100 clients, "
        "per scheme (median of 7 runs); it takes no options (docs/partitioning.md)\n");
    return std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ? 0 : 2;
  }
  std::vector<int32_t> labels(60000), users;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i % 10);
  Rng(1, "bench").shuffle(std::span(labels));
  fmt::print("{:<20} {:>10} {:>12}\n", "scheme", "clients", "median ms");
  for (const auto& scheme : partition_schemes()) {
    if (scheme == "natural") continue;  // needs user ids; linear in n like iid
    for (double conc : {0.01, 1.0}) {
      const bool dirichlet = scheme.starts_with("dirichlet") || scheme == "iid-quantity";
      if (!dirichlet && conc != 1.0) continue;
      PartitionParams p{.scheme = scheme, .clients = 100, .alpha = conc, .beta = conc};
      std::vector<double> ms;
      for (int r = 0; r < 7; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const Manifest m = partition({"bench", "0", labels, users, 10}, p);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::sort(ms.begin(), ms.end());
      fmt::print("{:<20} {:>10} {:>12.1f}{}\n", scheme, 100, ms[3],
                 dirichlet
                     ? fmt::format("   ({} {})", scheme_reads(p, "alpha") ? "alpha" : "beta", conc)
                     : "");
    }
  }
}
