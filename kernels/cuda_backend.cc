// The CUDA backend: device memory, matrix products through cuBLAS, everything else through
// fedpar's kernels (kernels/*.cu, declared in launch.h), all on one stream per backend. Host code,
// compiled by the C++ compiler. Convolutions run as im2col + cuBLAS + col2im (Im2colConv).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/im2col_conv.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_info.h"
#include "kernels/launch.h"

namespace fedpar {
namespace {

// The stream and cuBLAS handle a backend runs everything on; destroyed in reverse order.
class Stream {
 public:
  Stream() {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&blas_));
    CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    // Plain FP32 products (no TF32), as on the CPU: the backends must agree within float rounding.
    CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH));
  }
  ~Stream() {
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    CUDA_CHECK(cudaSetDevice(device));
    stream_ = std::make_unique<Stream>();
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    int runtime = 0, blas = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUBLAS_CHECK(cublasGetVersion(stream_->blas(), &blas));
    describe_ = fmt::format("cuda: {} (sm_{}{}, {:.0f} GiB), CUDA runtime {}.{}, cuBLAS {}", p.name,
                            p.major, p.minor, double(p.totalGlobalMem) / double(1ull << 30),
                            runtime / 1000, runtime % 1000 / 10, blas);
    scratch_ = DeviceArray<double>(*this, cuda::reduce_scratch_doubles(0) + 1);
  }
  ~CudaBackend() override {
    // Owned device arrays free through this backend: release them before the stream goes.
    conv_.reset();
    rows_ = {};
    scratch_ = {};
    half_a_ = {};
    half_b_ = {};
  }

  std::string_view name() const override { return "cuda"; }
  std::string describe() const override { return describe_; }

  void* allocate(size_t bytes) override {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
    return p;
  }
  void deallocate(void* p) noexcept override { cudaFree(p); }
  void upload(void* dst, const void* host, size_t bytes) override {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s()));
    stream_->sync();  // the host buffer may change as soon as we return
  }
  void download(void* host, const void* src, size_t bytes) override {
    if (!bytes) return;
    CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s()));
    stream_->sync();
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s()));
  }
  void fill(float* x, float value, size_t n) override {
    cuda::fill(x, value, n, s());
    check_launch();
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  void gemm(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, const float* b,
            float beta, float* c) override {
    if (m == 0 || n == 0) return;
    const bool at = ta == Trans::kYes, bt = tb == Trans::kYes;
    const cublasOperation_t opa = at ? CUBLAS_OP_T : CUBLAS_OP_N,
                            opb = bt ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (precision() == Precision::kF32) {
      CUBLAS_CHECK(cublasSgemm(stream_->blas(), opb, opa, n, m, k, &alpha, b, bt ? k : n, a,
                               at ? m : k, &beta, c, n));
      return;
    }
    // Reduced precision: inputs rounded to 16 bits, products accumulated in fp32 on tensor cores.
    const bool bf16 = precision() == Precision::kBF16;
    const size_t na = size_t(m) * k, nb = size_t(k) * n;
    half_a_.reserve(*this, std::max<size_t>(na, 1));
    half_b_.reserve(*this, std::max<size_t>(nb, 1));
    if (bf16) {
      cuda::to_bf16(half_a_.data(), a, na, s());
      cuda::to_bf16(half_b_.data(), b, nb, s());
    } else {
      cuda::to_f16(half_a_.data(), a, na, s());
      cuda::to_f16(half_b_.data(), b, nb, s());
    }
    check_launch();
    const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    CUBLAS_CHECK(cublasSetMathMode(stream_->blas(), CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasGemmEx(stream_->blas(), opb, opa, n, m, k, &alpha, half_b_.data(), t,
                              bt ? k : n, half_a_.data(), t, at ? m : k, &beta, c, CUDA_R_32F, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasSetMathMode(stream_->blas(), CUBLAS_PEDANTIC_MATH));
  }
  void add_bias(float* y, const float* bias, int rows, int cols) override {
    cuda::add_bias(y, bias, rows, cols, s());
    check_launch();
  }
  void sum_rows(float* out, const float* x, int rows, int cols, float beta) override {
    cuda::sum_rows(out, x, rows, cols, beta, s());
    check_launch();
  }

  void relu_forward(float* y, const float* x, size_t n) override {
    cuda::relu_forward(y, x, n, s());
    check_launch();
  }
  void relu_backward(float* dx, const float* dy, const float* y, size_t n) override {
    cuda::relu_backward(dx, dy, y, n, s());
    check_launch();
  }
  void axpy(float* y, const float* x, float a, size_t n) override {
    cuda::axpy(y, x, a, n, s());
    check_launch();
  }
  void scale(float* x, float a, size_t n) override {
    cuda::scale(x, a, n, s());
    check_launch();
  }
  void sgd_step(float* w, float* v, const float* g, float lr, float momentum, float wd,
                bool nesterov, size_t n, float* applied) override {
    cuda::sgd_step(w, v, g, lr, momentum, wd, nesterov, n, applied, s());
    check_launch();
  }

  double dot(const float* x, const float* y, size_t n) override {
    cuda::dot(result(), x, y, n, scratch_.data() + 1, s());
    check_launch();
    return fetch_result();
  }

  double softmax_xent(float* dlogits, const float* logits, const int32_t* labels, int rows,
                      int classes, float grad_scale) override {
    cuda::softmax_xent_rows(row_buffer(rows), dlogits, logits, labels, rows, classes, grad_scale,
                            s());
    check_launch();
    return sum_rows_buffer(rows);
  }
  double squared_error(float* dpred, const float* pred, const int32_t* labels, int rows,
                       int outputs, float grad_scale) override {
    cuda::squared_error_rows(row_buffer(rows), dpred, pred, labels, rows, outputs, grad_scale, s());
    check_launch();
    return sum_rows_buffer(rows);
  }
  int64_t count_correct(const float* scores, const int32_t* labels, int rows,
                        int classes) override {
    cuda::correct_rows(row_buffer(rows), scores, labels, rows, classes, s());
    check_launch();
    return int64_t(sum_rows_buffer(rows));
  }

  void im2col(float* cols, const float* x, int n, int h, int w, int c, int k, int pad) override {
    cuda::im2col(cols, x, n, h, w, c, k, pad, s());
    check_launch();
  }
  void col2im(float* dx, const float* dcols, int n, int h, int w, int c, int k, int pad) override {
    cuda::col2im(dx, dcols, n, h, w, c, k, pad, s());
    check_launch();
  }
  void conv2d_forward(const ConvShape& sh, const float* x, const float* w, const float* b,
                      float* y) override {
    conv().forward(sh, x, w, b, y);
  }
  void conv2d_backward(const ConvShape& sh, const float* x, const float* w, const float* dy,
                       float* dx, float* dw, float* db) override {
    conv().backward(sh, x, w, dy, dx, dw, db);
  }
  void maxpool2_forward(float* y, int32_t* argmax, const float* x, int n, int h, int w,
                        int c) override {
    cuda::maxpool2_forward(y, argmax, x, n, h, w, c, s());
    check_launch();
  }
  void maxpool2_backward(float* dx, const float* dy, const int32_t* argmax, int n, int h, int w,
                         int c) override {
    cuda::maxpool2_backward(dx, dy, argmax, n, h, w, c, s());
    check_launch();
  }

 private:
  cudaStream_t s() const { return stream_->get(); }
  // A launch error (bad configuration, no kernel image for this GPU) surfaces here, at the call.
  static void check_launch() { CUDA_CHECK(cudaGetLastError()); }
  double* result() { return scratch_.data(); }
  double fetch_result() {
    double v = 0;
    download(&v, result(), sizeof v);
    return v;
  }
  double* row_buffer(int rows) {
    rows_.reserve(*this, size_t(std::max(rows, 1)));
    return rows_.data();
  }
  double sum_rows_buffer(int rows) {
    cuda::sum(result(), rows_.data(), size_t(std::max(rows, 0)), scratch_.data() + 1, s());
    check_launch();
    return fetch_result();
  }
  Im2colConv& conv() {
    if (!conv_) conv_ = std::make_unique<Im2colConv>(*this);
    return *conv_;
  }

  int device_;
  std::unique_ptr<Stream> stream_;
  std::string describe_;
  DeviceArray<double> scratch_;            // [0]: a reduction's result; [1..]: block partials
  DeviceArray<double> rows_;               // per-row losses / correct flags
  DeviceArray<uint16_t> half_a_, half_b_;  // gemm inputs in bf16 / fp16
  std::unique_ptr<Im2colConv> conv_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  const int n = cuda_device_count();
  if (n == 0) throw Error("device 'cuda': " + cuda_describe() + " (use --device cpu)");
  return std::make_unique<CudaBackend>(0);
}

// make_backend("cuda") finds it here (this object is linked whole: CMakeLists.txt).
[[maybe_unused]] const bool kCudaRegistered =
    register_backend("cuda", [](int) { return make_cuda_backend(); });

}  // namespace fedpar
