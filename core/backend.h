// Backend: device memory and the few numeric ops the models need. `cpu` (Eigen) is the reference
// implementation; `cuda` lives in kernels/. Models call only this interface, so they run unchanged
// on either. All matrices are row-major and contiguous; pointers are device pointers.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/precision.h"

namespace fedpar {

enum class Trans { kNo, kYes };

// A convolution, stride 1: x (n, h, w, c) NHWC, weights (oc, k, k, c) OHWI, bias (oc),
// y (n, out_h, out_w, oc). 'same' (k odd, padding k / 2 on every side: out = in) or valid.
struct ConvShape {
  int n, h, w, c, oc, k;
  bool valid = false;  // false: 'same' (zero padding k / 2, odd k); true: no padding
  int pad() const { return valid ? 0 : k / 2; }
  int out_h() const { return h + 2 * pad() - k + 1; }
  int out_w() const { return w + 2 * pad() - k + 1; }
  auto operator<=>(const ConvShape&) const = default;
};

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // One line on what the backend runs on (BLAS, threads, device), for logs and benchmarks.
  virtual std::string describe() const = 0;
  // True when device pointers are plain host memory (the CPU backend): callers may then write
  // batches straight into device buffers instead of staging them.
  virtual bool host_memory() const { return false; }
  // Host-memory backends only (the others' batches are staged): out's row i = rows' row idx[i],
  // rows of `dim` floats, a batch's gather. The CPU backend splits large ones over its threads.
  virtual void gather_rows(float* out, const float* rows, std::span<const uint32_t> idx,
                           size_t dim);

  // Matrix products (gemm, and the convolutions built on it) take their inputs rounded to this
  // precision and accumulate in fp32; all else stays fp32 (core/precision.h).
  void set_precision(Precision p) { precision_ = p; }
  Precision precision() const { return precision_; }

  // Bytes the core holds on this backend right now through DeviceArrays, which count their own
  // allocations here: the measured memory of memory accounting.
  size_t live_bytes() const { return live_bytes_.load(std::memory_order_relaxed); }
  void count_bytes(size_t bytes, bool freed) {
    if (freed)
      live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    else
      live_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

  // ---- memory (bytes); contents of fresh memory are unspecified ----
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill(float* x, float value, size_t n) = 0;

  // ---- dense algebra ----
  // c(m, n) = alpha * op(a) * op(b) + beta * c, op(a) is (m, k), op(b) is (k, n).
  virtual void gemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a,
                    const float* b, float beta, float* c) = 0;
  // y(rows, cols) += bias(cols) broadcast over rows.
  virtual void add_bias(float* y, const float* bias, int rows, int cols) = 0;
  // out(cols) = beta * out + column sums of x(rows, cols).
  virtual void sum_rows(float* out, const float* x, int rows, int cols, float beta) = 0;

  // ---- elementwise ----
  virtual void relu_forward(float* y, const float* x, size_t n) = 0;
  // dx = dy where y > 0, else 0. (y is the forward output.)
  virtual void relu_backward(float* dx, const float* dy, const float* y, size_t n) = 0;
  virtual void axpy(float* y, const float* x, float a, size_t n) = 0;  // y += a * x
  virtual void scale(float* x, float a, size_t n) = 0;                 // x *= a
  // SGD with momentum and L2 weight decay, PyTorch's convention:
  //   d = g + wd * w;  v = momentum * v + d;  w -= lr * (nesterov ? d + momentum * v : v)
  // With momentum == 0, v is not touched (may be null). When `applied` is not null the same
  // change is also accumulated there (applied -= lr * ...), so a sum of steps keeps the bits that
  // rounding w to float loses (the model delta a client sends).
  virtual void sgd_step(float* w, float* v, const float* g, float lr, float momentum, float wd,
                        bool nesterov, size_t n, float* applied) = 0;

  // ---- reductions (accumulated in double) ----
  virtual double dot(const float* x, const float* y, size_t n) = 0;

  // ---- losses; targets are class labels ----
  // Softmax cross-entropy per row of logits(rows, classes). Returns the SUM of row losses and
  // writes dlogits = grad_scale * (softmax - onehot). dlogits may be null (forward only).
  virtual double softmax_xent(float* dlogits, const float* logits, const int32_t* labels, int rows,
                              int classes, float grad_scale) = 0;
  // Squared error against one-hot targets: per row 0.5 * ||pred - onehot||^2. Returns the SUM;
  // dpred = grad_scale * (pred - onehot). dpred may be null.
  virtual double squared_error(float* dpred, const float* pred, const int32_t* labels, int rows,
                               int outputs, float grad_scale) = 0;
  // Number of rows whose argmax (first maximum) equals the label.
  virtual int64_t count_correct(const float* scores, const int32_t* labels, int rows,
                                int classes) = 0;

  // ---- convolution helpers, NHWC layout, stride 1, square kernel k, zero padding pad ----
  // cols(n*oh*ow, k*k*c), oh = h + 2 pad - k + 1 (ow alike): row = output pixel, columns ordered
  // (ky, kx, c).
  virtual void im2col(float* cols, const float* x, int n, int h, int w, int c, int k, int pad) = 0;
  // Inverse scatter-add of im2col: dx (overwritten) from dcols.
  virtual void col2im(float* dx, const float* dcols, int n, int h, int w, int c, int k,
                      int pad) = 0;
  // ---- convolution (Im2colConv in core/im2col_conv.h runs it on the ops above) ----
  // y = conv(x, weights) + bias.
  virtual void conv2d_forward(const ConvShape& s, const float* x, const float* weights,
                              const float* bias, float* y) = 0;
  // ADDS the weight and bias gradients into dweights and dbias; overwrites dx unless it is null.
  virtual void conv2d_backward(const ConvShape& s, const float* x, const float* weights,
                               const float* dy, float* dx, float* dweights, float* dbias) = 0;

  // 2x2 max-pool, stride 2 (h, w even). argmax holds the winner's index in its window
  // (0..3, row-major; first maximum wins ties).
  virtual void maxpool2_forward(float* y, int32_t* argmax, const float* x, int n, int h, int w,
                                int c) = 0;
  // dx (overwritten, n*h*w*c) from dy (n*h/2*w/2*c).
  virtual void maxpool2_backward(float* dx, const float* dy, const int32_t* argmax, int n, int h,
                                 int w, int c) = 0;

 private:
  std::atomic<size_t> live_bytes_{0};
  Precision precision_ = Precision::kF32;
};

// Owns n elements of T in a backend's memory. Move-only; frees in its destructor.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Backend& be, size_t n) : be_(&be), n_(n) {
    if (n > 0) {
      p_ = static_cast<T*>(be.allocate(n * sizeof(T)));
      be.count_bytes(n * sizeof(T), false);
    }
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    DeviceArray(std::move(o)).swap(*this);
    return *this;
  }
  ~DeviceArray() {
    if (p_) {
      be_->deallocate(p_);
      be_->count_bytes(n_ * sizeof(T), true);
    }
  }
  void swap(DeviceArray& o) noexcept {
    std::swap(be_, o.be_);
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  // Grows (never shrinks) to hold at least n elements; contents are not preserved.
  void reserve(Backend& be, size_t n) {
    if (n > n_ || !be_) *this = DeviceArray(be, std::max(n, n_));
  }
  void upload(const T* host, size_t n) { be_->upload(p_, host, n * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    if (n_) be_->download(v.data(), p_, n_ * sizeof(T));
    return v;
  }

 private:
  Backend* be_ = nullptr;
  T* p_ = nullptr;
  size_t n_ = 0;
};

// Names accepted by make_backend in this build: "cpu", plus those registered ("cuda": kernels/
// registers it when the build has CUDA, so the core includes nothing of kernels/; the fedpar
// command loads it from its module libfedpar_cuda.so on first use).
std::vector<std::string> backend_names();
using BackendFactory = std::unique_ptr<Backend> (*)(int threads);
// Adds a backend under `name`; returns true (for static registration). A name twice is an Error.
bool register_backend(const std::string& name, BackendFactory make);
// Creates a backend by name, or throws Error naming the valid choices / why it is unavailable.
// `threads` is the CPU thread count for matrix products (0 = library default).
std::unique_ptr<Backend> make_backend(std::string_view name, int threads = 1);

// Loads the fedpar command's CUDA module (kernels/, which registers "cuda" and, built with NCCL,
// NCCL) unless this program has it already; Error naming `what` when the build has no CUDA or the
// module fails to load.
void ensure_cuda_module(std::string_view what);

}  // namespace fedpar
