// allreduce.backend = "nccl" on this process's GPU: the implementation core/device_collective.h
// names, registered when the CUDA module loads (built when NCCL is found).
// The worker's gradient sum lives in host memory (the replica steps there, as on every backend), so
// each step copies it to the GPU, sums it with ncclAllReduce and copies it back.
// The communicator is non-blocking and every wait has a deadline, as the zmq-ring's receives do: a
// rank that died or never joins stops the others with an Error (ncclCommAbort) instead of a hang.
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/device_collective.h"
#include "kernels/cuda_check.h"

namespace fedpar {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NCCL_UNIQUE_ID_BYTES changed");

using Clock = std::chrono::steady_clock;

[[noreturn]] void nccl_failed(const char* call, ncclResult_t r) {
  throw Error(
      fmt::format("allreduce.backend = \"nccl\": {} failed: {}", call, ncclGetErrorString(r)));
}

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclUniqueId& id, int rank, int size, double deadline_seconds)
      : deadline_(deadline_seconds) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      throw Error(
          "allreduce.backend = \"nccl\" sums on GPUs: this client process sees no CUDA device");
    CUDA_CHECK(cudaSetDevice(0));  // the cuda backend's device (CUDA_VISIBLE_DEVICES picks it)
    // one summation order for every rank and run: NCCL's ring with its simple protocol (a user's
    // own NCCL_ALGO / NCCL_PROTO stay); set before NCCL reads them, at its first communicator
    setenv("NCCL_ALGO", "Ring", 0);
    setenv("NCCL_PROTO", "Simple", 0);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ncclUniqueId nid;
    std::memcpy(&nid, id.data(), sizeof nid);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, size, nid, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      cudaStreamDestroy(stream_);
      nccl_failed("ncclCommInitRank", r);
    }
    // joining waits for every rank: a large cluster's bootstrap may take longer than one step's sum
    try {
      settle("ncclCommInitRank (did every worker join?)", std::max(deadline_, 60.0));
    } catch (...) {
      cudaStreamDestroy(stream_);
      throw;
    }
  }

  ~NcclAllReduce() override {
    if (failed_)
      ncclCommAbort(comm_);  // a peer may be gone: destroying would wait for it
    else
      ncclCommDestroy(comm_);
    cudaFree(buffer_);
    cudaStreamDestroy(stream_);
  }

  void sum(std::span<float> data) override {
    if (failed_) throw Error("allreduce.backend = \"nccl\": the communicator failed earlier");
    const size_t bytes = data.size() * sizeof(float);
    if (data.size() > capacity_) {
      CUDA_CHECK(cudaFree(buffer_));
      buffer_ = nullptr, capacity_ = 0;
      CUDA_CHECK(cudaMalloc(&buffer_, bytes));
      capacity_ = data.size();
    }
    const auto start = Clock::now();
    CUDA_CHECK(cudaMemcpyAsync(buffer_, data.data(), bytes, cudaMemcpyHostToDevice, stream_));
    const ncclResult_t r =
        ncclAllReduce(buffer_, buffer_, data.size(), ncclFloat, ncclSum, comm_, stream_);
    if (r != ncclSuccess && r != ncclInProgress) fail("ncclAllReduce", r);
    settle("ncclAllReduce", deadline_);  // enqueued
    CUDA_CHECK(cudaMemcpyAsync(data.data(), buffer_, bytes, cudaMemcpyDeviceToHost, stream_));
    // the sum waits for the slowest rank: at most the deadline, as the zmq-ring's receives
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) CUDA_CHECK(q);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail("ncclAllReduce", async);
      if (seconds_since(start) > deadline_) timed_out("ncclAllReduce (did a worker die?)");
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

 private:
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  // Waits until the communicator leaves ncclInProgress, at most `seconds`.
  void settle(const char* call, double seconds) {
    const auto start = Clock::now();
    while (true) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) fail(call, r);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(call, state);
      if (seconds_since(start) > seconds) timed_out(call);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  [[noreturn]] void fail(const char* call, ncclResult_t r) {
    failed_ = true;
    nccl_failed(call, r);
  }
  [[noreturn]] void timed_out(const char* call) {
    failed_ = true;
    throw Error(fmt::format(
        "allreduce.backend = \"nccl\": {} did not finish within {} s (allreduce.deadline_seconds)",
        call, deadline_));
  }

  double deadline_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* buffer_ = nullptr;
  size_t capacity_ = 0;  // floats
  bool failed_ = false;
};

NcclUniqueId unique_id() {
  ncclUniqueId nid;
  const ncclResult_t r = ncclGetUniqueId(&nid);
  if (r != ncclSuccess) nccl_failed("ncclGetUniqueId", r);
  NcclUniqueId id;
  std::memcpy(id.data(), &nid, id.size());
  return id;
}

std::unique_ptr<DeviceAllReduce> join(const NcclUniqueId& id, int rank, int size,
                                      double deadline_seconds) {
  return std::make_unique<NcclAllReduce>(id, rank, size, deadline_seconds);
}

std::string version() {
  int v = 0;
  ncclGetVersion(&v);  // major * 10000 + minor * 100 + patch since 2.9
  return fmt::format("NCCL {}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace

// nccl() finds it here (this object is linked whole: CMakeLists.txt).
[[maybe_unused]] const bool kNcclRegistered =
    register_nccl({.version = version(), .unique_id = unique_id, .join = join});

}  // namespace fedpar
