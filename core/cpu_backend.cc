// CPU backend on Eigen; see cpu_backend.h and backend.h for the op contracts.
#include "core/cpu_backend.h"

#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "core/check.h"
#include "core/im2col_conv.h"
#ifdef FEDPAR_HAVE_ONEDNN
#include "core/onednn_conv.h"
#endif

#ifdef FEDPAR_HAVE_OPENBLAS
#include <cblas.h>
extern "C" {
void openblas_set_num_threads(int);
char* openblas_get_corename(void);
}
#endif

namespace fedpar {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat, Eigen::Unaligned>;
using Map = Eigen::Map<RowMat, Eigen::Unaligned>;

constexpr size_t kAlignment = 64;

// Elementwise loops shorter than this stay on one thread. They are memory-bound, and on the 2-core
// development VM a parallel region costs more than splitting fewer floats saves: at 2^15 (about
// PyTorch's grain size) the 2NN's update of its 199,210 parameters went to 2 threads, and
// bench_train's 2NN at batch 10 on 2 threads ran slower than on 1 (docs/benchmarks.md).
constexpr size_t kParallelMin = size_t(1) << 18;

// Visits every tap of every k x k patch of sample b (NHWC, stride 1, zero padding pad) in im2col's
// order, calling f(col, pix): `col` is the offset of the tap's c floats in the patch matrix, `pix`
// the offset of the input pixel's c floats, or kPadding where the tap falls outside the image.
constexpr size_t kPadding = ~size_t(0);
template <typename F>
void for_each_tap(int b, int h, int w, int c, int k, int pad, F&& f) {
  const size_t row_len = size_t(k) * k * c;
  const int oh = h + 2 * pad - k + 1, ow = w + 2 * pad - k + 1;
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      const size_t row = ((size_t(b) * oh + oy) * ow + ox) * row_len;
      for (int ky = 0; ky < k; ++ky) {
        const int iy = oy + ky - pad;
        for (int kx = 0; kx < k; ++kx) {
          const int ix = ox + kx - pad;
          const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
          f(row + (size_t(ky) * k + kx) * c,
            inside ? ((size_t(b) * h + iy) * w + ix) * c : kPadding);
        }
      }
    }
}

template <typename A, typename B>
void gemm_into(Map& c, const A& a, const B& b, float alpha, float beta) {
  if (beta == 0.0f) {
    c.noalias() = alpha * a * b;
  } else {
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * a * b;
  }
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(std::max(threads, 1)) {
    Eigen::setNbThreads(1);
    omp_set_num_threads(threads_);  // oneDNN's OpenMP runtime takes its thread count from here
#ifdef FEDPAR_HAVE_OPENBLAS
    openblas_set_num_threads(threads_);
#endif
  }
  std::string_view name() const override { return "cpu"; }
  bool host_memory() const override { return true; }
  void gather_rows(float* out, const float* rows, std::span<const uint32_t> idx,
                   size_t dim) override {
    ranges(idx.size(), idx.size() * dim, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i)
        std::memcpy(out + i * dim, rows + size_t(idx[i]) * dim, dim * sizeof(float));
    });
  }
  std::string describe() const override {
#ifdef FEDPAR_HAVE_OPENBLAS
    const std::string large =
        fmt::format("OpenBLAS core={}, {} thread(s)", openblas_get_corename(), threads_);
#else
    const std::string large = "Eigen, 1 thread (built without OpenBLAS)";
#endif
#ifdef FEDPAR_HAVE_ONEDNN
    const std::string conv = conv_.describe();
#else
    const std::string conv = "im2col + matrix product";
#endif
    return fmt::format(
        "cpu: Eigen {}.{}.{} ({}{}) for small products, {} for large; "
        "convolutions: {}",
        EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION,
        Eigen::SimdInstructionSetsInUse(),
#ifdef __FMA__
        ", FMA",
#else
        "",
#endif
        large, conv);
  }

  void* allocate(size_t bytes) override {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* host, size_t bytes) override { copy(dst, host, bytes); }
  void download(void* host, const void* src, size_t bytes) override { copy(host, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void fill(float* x, float value, size_t n) override { std::fill(x, x + n, value); }

  void gemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, const float* b,
            float beta, float* c) override {
    Map cm(c, m, n);
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (beta == 0.0f)
        cm.setZero();
      else
        cm *= beta;
      return;
    }
    const bool at = ta == Trans::kYes, bt = tb == Trans::kYes;
    if (precision() != Precision::kF32) {  // the reference of reduced-precision products
      a = rounded(a, size_t(m) * k, round_a_);
      b = rounded(b, size_t(k) * n, round_b_);
    }
#ifdef FEDPAR_HAVE_OPENBLAS
    if (double(m) * n * k >= kBlasMinMacs) {
      cblas_sgemm(CblasRowMajor, at ? CblasTrans : CblasNoTrans, bt ? CblasTrans : CblasNoTrans, m,
                  n, k, alpha, a, at ? m : k, b, bt ? k : n, beta, c, n);
      return;
    }
#endif
    MapC am(a, at ? k : m, at ? m : k);
    MapC bm(b, bt ? n : k, bt ? k : n);
    if (!at && !bt)
      gemm_into(cm, am, bm, alpha, beta);
    else if (!at && bt)
      gemm_into(cm, am, bm.transpose(), alpha, beta);
    else if (at && !bt)
      gemm_into(cm, am.transpose(), bm, alpha, beta);
    else
      gemm_into(cm, am.transpose(), bm.transpose(), alpha, beta);
  }

  void add_bias(float* y, const float* bias, int rows, int cols) override {
    ranges(size_t(rows), size_t(rows) * cols, [&](size_t lo, size_t hi) {
      for (size_t r = lo; r < hi; ++r) {
        float* row = y + r * cols;
        for (int c = 0; c < cols; ++c) row[c] += bias[c];
      }
    });
  }
  void sum_rows(float* out, const float* x, int rows, int cols, float beta) override {
    for (int c = 0; c < cols; ++c) out[c] = beta == 0.0f ? 0.0f : beta * out[c];
    for (int r = 0; r < rows; ++r) {
      const float* row = x + size_t(r) * cols;
      for (int c = 0; c < cols; ++c) out[c] += row[c];
    }
  }

  void relu_forward(float* y, const float* x, size_t n) override {
    ranges(n, n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    });
  }
  void relu_backward(float* dx, const float* dy, const float* y, size_t n) override {
    ranges(n, n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    });
  }
  void axpy(float* y, const float* x, float a, size_t n) override {
    ranges(n, n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) y[i] += a * x[i];
    });
  }
  void scale(float* x, float a, size_t n) override {
    ranges(n, n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) x[i] *= a;
    });
  }
  void sgd_step(float* w, float* v, const float* g, float lr, float momentum, float wd,
                bool nesterov, size_t n, float* applied) override {
    ranges(n, n, [&](size_t lo, size_t hi) {
      if (momentum == 0.0f) {
        if (applied) {
          for (size_t i = lo; i < hi; ++i) {
            const float u = g[i] + wd * w[i];
            w[i] -= lr * u;
            applied[i] -= lr * u;
          }
        } else {
          for (size_t i = lo; i < hi; ++i) w[i] -= lr * (g[i] + wd * w[i]);
        }
        return;
      }
      for (size_t i = lo; i < hi; ++i) {
        const float d = g[i] + wd * w[i];
        v[i] = momentum * v[i] + d;
        const float u = nesterov ? d + momentum * v[i] : v[i];
        w[i] -= lr * u;
        if (applied) applied[i] -= lr * u;
      }
    });
  }

  double dot(const float* x, const float* y, size_t n) override {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += double(x[i]) * double(y[i]);
    return s;
  }

  double softmax_xent(float* dlogits, const float* logits, const int32_t* labels, int rows,
                      int classes, float grad_scale) override {
    double total = 0.0;
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + size_t(r) * classes;
      float zmax = z[0];
      for (int c = 1; c < classes; ++c) zmax = std::max(zmax, z[c]);
      double sum = 0.0;
      for (int c = 0; c < classes; ++c) sum += std::exp(double(z[c] - zmax));
      const int y = labels[r];
      total += std::log(sum) - double(z[y] - zmax);
      if (dlogits) {
        float* d = dlogits + size_t(r) * classes;
        const double inv = 1.0 / sum;
        for (int c = 0; c < classes; ++c) {
          const double p = std::exp(double(z[c] - zmax)) * inv;
          d[c] = grad_scale * float(p - (c == y ? 1.0 : 0.0));
        }
      }
    }
    return total;
  }

  double squared_error(float* dpred, const float* pred, const int32_t* labels, int rows,
                       int outputs, float grad_scale) override {
    double total = 0.0;
    for (int r = 0; r < rows; ++r) {
      const float* p = pred + size_t(r) * outputs;
      for (int c = 0; c < outputs; ++c) {
        const float e = p[c] - (c == labels[r] ? 1.0f : 0.0f);
        total += 0.5 * double(e) * double(e);
        if (dpred) dpred[size_t(r) * outputs + c] = grad_scale * e;
      }
    }
    return total;
  }

  int64_t count_correct(const float* scores, const int32_t* labels, int rows,
                        int classes) override {
    int64_t correct = 0;
    for (int r = 0; r < rows; ++r) {
      const float* s = scores + size_t(r) * classes;
      int best = 0;
      for (int c = 1; c < classes; ++c)
        if (s[c] > s[best]) best = c;
      correct += best == labels[r];
    }
    return correct;
  }

  void im2col(float* cols, const float* x, int n, int h, int w, int c, int k, int pad) override {
    ranges(size_t(n), size_t(n) * h * w * k * k * c, [&](size_t lo, size_t hi) {
      for (size_t b = lo; b < hi; ++b)
        for_each_tap(int(b), h, w, c, k, pad, [&](size_t col, size_t pix) {
          if (pix == kPadding)
            std::fill(cols + col, cols + col + c, 0.0f);
          else
            std::copy(x + pix, x + pix + c, cols + col);
        });
    });
  }

  void col2im(float* dx, const float* dcols, int n, int h, int w, int c, int k, int pad) override {
    // Each sample scatters into its own slice of dx, so samples can go to different threads.
    ranges(size_t(n), size_t(n) * h * w * k * k * c, [&](size_t lo, size_t hi) {
      std::fill(dx + lo * h * w * c, dx + hi * h * w * c, 0.0f);
      for (size_t b = lo; b < hi; ++b)
        for_each_tap(int(b), h, w, c, k, pad, [&](size_t col, size_t pix) {
          if (pix == kPadding) return;
          for (int ch = 0; ch < c; ++ch) dx[pix + ch] += dcols[col + ch];
        });
    });
  }

  void conv2d_forward(const ConvShape& s, const float* x, const float* w, const float* b,
                      float* y) override {
#ifdef FEDPAR_HAVE_ONEDNN
    if (precision() != Precision::kF32) return reduced_conv_.forward(s, x, w, b, y);
#endif
    conv_.forward(s, x, w, b, y);
  }
  void conv2d_backward(const ConvShape& s, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db) override {
#ifdef FEDPAR_HAVE_ONEDNN
    if (precision() != Precision::kF32) return reduced_conv_.backward(s, x, w, dy, dx, dw, db);
#endif
    conv_.backward(s, x, w, dy, dx, dw, db);
  }

  void maxpool2_forward(float* y, int32_t* argmax, const float* x, int n, int h, int w,
                        int c) override {
    const int oh = h / 2, ow = w / 2;
    ranges(size_t(n), size_t(n) * h * w * c, [&](size_t lo, size_t hi) {
      for (size_t b = lo; b < hi; ++b)
        for (int oy = 0; oy < oh; ++oy)
          for (int ox = 0; ox < ow; ++ox)
            for (int ch = 0; ch < c; ++ch) {
              auto at = [&](int win) {
                return ((b * h + 2 * size_t(oy) + win / 2) * w + 2 * size_t(ox) + win % 2) * c + ch;
              };
              int32_t best = 0;
              for (int32_t win = 1; win < 4; ++win)
                if (x[at(win)] > x[at(best)]) best = win;  // the first maximum wins ties
              const size_t o = ((b * oh + oy) * ow + ox) * c + ch;
              y[o] = x[at(best)];
              argmax[o] = best;
            }
    });
  }

  void maxpool2_backward(float* dx, const float* dy, const int32_t* argmax, int n, int h, int w,
                         int c) override {
    const int oh = h / 2, ow = w / 2;
    ranges(size_t(n), size_t(n) * h * w * c, [&](size_t lo, size_t hi) {
      std::fill(dx + lo * h * w * c, dx + hi * h * w * c, 0.0f);
      for (size_t b = lo; b < hi; ++b)
        for (int oy = 0; oy < oh; ++oy)
          for (int ox = 0; ox < ow; ++ox)
            for (int ch = 0; ch < c; ++ch) {
              const size_t o = ((b * oh + oy) * ow + ox) * c + ch;
              const int win = argmax[o];
              dx[((b * h + 2 * size_t(oy) + win / 2) * w + 2 * size_t(ox) + win % 2) * c + ch] +=
                  dy[o];
            }
    });
  }

 private:
  // x rounded to the backend's precision, in `buf`.
  const float* rounded(const float* x, size_t n, std::vector<float>& buf) {
    buf.resize(n);
    for (size_t i = 0; i < n; ++i) buf[i] = round_to(precision(), x[i]);
    return buf.data();
  }

  // Runs body(lo, hi) over [0, n) split into one contiguous range per thread when `work` (floats
  // touched) is worth a parallel region; otherwise calls it once, inline. Even an OpenMP region
  // whose `if` is false costs microseconds, which small batches cannot afford.
  template <typename F>
  void ranges(size_t n, size_t work, F&& body) {
    if (threads_ <= 1 || n < 2 || work < kParallelMin) {
      body(size_t(0), n);
      return;
    }
#pragma omp parallel num_threads(threads_)
    {
      const size_t t = size_t(omp_get_thread_num()), nt = size_t(omp_get_num_threads());
      body(n * t / nt, n * (t + 1) / nt);
    }
  }

  int threads_;
  std::vector<float> round_a_, round_b_;  // gemm inputs rounded to a reduced precision
#ifdef FEDPAR_HAVE_ONEDNN
  OneDnnConv conv_;
  Im2colConv reduced_conv_{*this};  // reduced precision: convolutions through gemm, which rounds
#else
  Im2colConv conv_{*this};
#endif
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace fedpar
