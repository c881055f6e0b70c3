// Matrix products, Eigen vs OpenBLAS, with 1 and 2 threads: GFLOP/s of C = A * B (row-major
// float32) for the 2NN's and the CNN's shapes, through the same Eigen map expression and the same
// cblas_sgemm call as core/cpu_backend.cc. The sides alternate repetition by repetition; the
// table gives medians. Usage: bench_gemm [--reps 11] [--min-seconds 0.1]
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_backend.h"  // kBlasMinMacs: where the backend switches to OpenBLAS
#include "core/median.h"

extern "C" {
void openblas_set_num_threads(int);
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat, Eigen::Unaligned>;
using Map = Eigen::Map<RowMat, Eigen::Unaligned>;

struct Shape {
  int m, n, k;
  const char* what;
};
const Shape kShapes[] = {
    {10, 200, 784, "2NN fc1 forward, batch 10"},
    {200, 784, 10, "2NN fc1 weight grad, batch 10"},
    {600, 200, 784, "2NN fc1 forward, batch 600"},
    {200, 784, 600, "2NN fc1 weight grad, batch 600"},
    {9800, 64, 800, "CNN conv2 forward, batch 50"},
    {64, 800, 9800, "CNN conv2 weight grad, batch 50"},
};

// 64-byte aligned buffer of random floats, as the backend allocates.
struct Free {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], Free>;
Buffer random_buffer(size_t n, unsigned seed) {
  Buffer b(static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64)));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) b[i] = u(rng);
  return b;
}

// Thread counts as the backend sets them (Eigen::setNbThreads, omp_set_num_threads,
// openblas_set_num_threads); the backend always runs Eigen on 1 thread, the 2-thread Eigen
// columns ask Eigen's own OpenMP-parallel product for 2.
void set_threads(int threads) {
  Eigen::setNbThreads(threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

void eigen_gemm(const Shape& s, const float* a, const float* b, float* c) {
  Map cm(c, s.m, s.n);
  cm.noalias() = 1.0f * MapC(a, s.m, s.k) * MapC(b, s.k, s.n);  // gemm_into with alpha 1, beta 0
}
void blas_gemm(const Shape& s, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a, s.k, b, s.n, 0.0f,
              c, s.n);
}

// GFLOP/s of one repetition: calls f until at least min_seconds have passed.
template <typename F>
double gflops(const Shape& s, double min_seconds, F&& f) {
  using clock = std::chrono::steady_clock;
  long calls = 0;
  const auto t0 = clock::now();
  double sec = 0;
  do {
    f();
    ++calls;
    sec = std::chrono::duration<double>(clock::now() - t0).count();
  } while (sec < min_seconds);
  return 2.0 * s.m * s.n * s.k * calls / sec / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 11;
  double min_seconds = 0.1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (opt == "--min-seconds")
      min_seconds = std::atof(argv[i + 1]);
    else
      return fmt::print(stderr, "usage: bench_gemm [--reps N] [--min-seconds S]\n"), 2;
  }
  const int thread_counts[] = {1, 2};
  const size_t ns = std::size(kShapes);
  // gf[shape][threads index][0 = Eigen, 1 = OpenBLAS]: one GFLOP/s per repetition.
  std::vector<std::vector<double>> gf(ns * 4);
  std::vector<Buffer> as, bs, ce, cb;
  for (size_t i = 0; i < ns; ++i) {
    const Shape& s = kShapes[i];
    as.push_back(random_buffer(size_t(s.m) * s.k, 1 + i));
    bs.push_back(random_buffer(size_t(s.k) * s.n, 100 + i));
    ce.push_back(random_buffer(size_t(s.m) * s.n, 0));
    cb.push_back(random_buffer(size_t(s.m) * s.n, 0));
  }
  // Both sides must compute the same product.
  set_threads(1);
  for (size_t i = 0; i < ns; ++i) {
    const Shape& s = kShapes[i];
    eigen_gemm(s, as[i].get(), bs[i].get(), ce[i].get());
    blas_gemm(s, as[i].get(), bs[i].get(), cb[i].get());
    double worst = 0;
    for (size_t j = 0; j < size_t(s.m) * s.n; ++j)
      worst = std::max(worst, double(std::abs(ce[i].get()[j] - cb[i].get()[j])) /
                                  (1.0 + std::abs(ce[i].get()[j])));
    if (worst > 1e-4)
      return fmt::print(stderr, "bench_gemm: {}x{}x{}: sides differ by {}\n", s.m, s.n, s.k, worst),
             1;
  }
  // rep 0 is a warm-up, not recorded; the side that goes first swaps every repetition.
  for (int rep = 0; rep <= reps; ++rep)
    for (size_t i = 0; i < ns; ++i)
      for (int t = 0; t < 2; ++t) {
        set_threads(thread_counts[t]);
        const Shape& s = kShapes[i];
        for (int o = 0; o < 2; ++o) {
          const int side = (o + rep) % 2;
          const double g =
              side == 0 ? gflops(s, min_seconds,
                                 [&] { eigen_gemm(s, as[i].get(), bs[i].get(), ce[i].get()); })
                        : gflops(s, min_seconds,
                                 [&] { blas_gemm(s, as[i].get(), bs[i].get(), cb[i].get()); });
          if (rep > 0) gf[i * 4 + t * 2 + side].push_back(g);
        }
      }

  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  fmt::print("Eigen {}.{}.{} ({}{}); OpenBLAS: {} (core {}); OPENBLAS_CORETYPE={}\n",
             EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION,
             Eigen::SimdInstructionSetsInUse(),
#ifdef __FMA__
             ", FMA",
#else
             "",
#endif
             openblas_get_config(), openblas_get_corename(), coretype ? coretype : "(unset)");
  fmt::print(
      "GFLOP/s of C = A * B, row-major float32; medians of {} repetitions of at least {} s each, "
      "sides alternating\n\n",
      reps, min_seconds);
  fmt::print(
      "| product (m x n x k) | what | backend uses | Eigen, 1 thread | OpenBLAS, 1 thread | "
      "Eigen, 2 threads | OpenBLAS, 2 threads | OpenBLAS/Eigen, 1 thread | "
      "OpenBLAS/Eigen, 2 threads |\n");
  fmt::print("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < ns; ++i) {
    const Shape& s = kShapes[i];
    double med[4];
    for (int j = 0; j < 4; ++j) med[j] = fedpar::median(gf[i * 4 + j]);
    const bool blas = double(s.m) * s.n * s.k >= fedpar::kBlasMinMacs;
    fmt::print("| {} x {} x {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |\n",
               s.m, s.n, s.k, s.what, blas ? "OpenBLAS" : "Eigen, 1 thread", med[0], med[1], med[2],
               med[3], med[1] / med[0], med[3] / med[2]);
  }
  return 0;
}
