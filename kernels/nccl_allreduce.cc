// allreduce.backend = "nccl" on this process's GPU: the implementation core/device_collective.h
// names, registered when the CUDA module loads (built when NCCL is found).
// The worker's gradient sum lives in host memory (the replica steps there, as on every backend), so
// each step copies it to the GPU, sums it with ncclAllReduce and copies it back.
#include <fmt/format.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>

#include "core/device_collective.h"
#include "kernels/cuda_check.h"

namespace fedpar {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NCCL_UNIQUE_ID_BYTES changed");

void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw Error(fmt::format("allreduce.backend = \"nccl\": {} failed: {} ({})", call,
                            ncclGetErrorString(r), ncclGetLastError(nullptr)));
}

class NcclAllReduce final : public DeviceAllReduce {
 public:
  NcclAllReduce(const NcclUniqueId& id, int rank, int size) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      throw Error(
          "allreduce.backend = \"nccl\" sums on GPUs: this client process sees no CUDA device");
    CUDA_CHECK(cudaSetDevice(0));  // the cuda backend's device (CUDA_VISIBLE_DEVICES picks it)
    // one summation order for every rank and run: NCCL's ring with its simple protocol (a user's
    // own NCCL_ALGO / NCCL_PROTO stay)
    setenv("NCCL_ALGO", "Ring", 0);
    setenv("NCCL_PROTO", "Simple", 0);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ncclUniqueId nid;
    std::memcpy(&nid, id.data(), sizeof nid);
    nccl_check(ncclCommInitRank(&comm_, size, nid, rank), "ncclCommInitRank");
  }
  ~NcclAllReduce() override {
    ncclCommDestroy(comm_);
    cudaFree(buffer_);
    cudaStreamDestroy(stream_);
  }
  void sum(std::span<float> data) override {
    const size_t bytes = data.size() * sizeof(float);
    if (data.size() > capacity_) {
      CUDA_CHECK(cudaFree(buffer_));
      buffer_ = nullptr;
      CUDA_CHECK(cudaMalloc(&buffer_, bytes));
      capacity_ = data.size();
    }
    CUDA_CHECK(cudaMemcpyAsync(buffer_, data.data(), bytes, cudaMemcpyHostToDevice, stream_));
    nccl_check(ncclAllReduce(buffer_, buffer_, data.size(), ncclFloat, ncclSum, comm_, stream_),
               "ncclAllReduce");
    CUDA_CHECK(cudaMemcpyAsync(data.data(), buffer_, bytes, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* buffer_ = nullptr;
  size_t capacity_ = 0;  // floats
};

NcclUniqueId unique_id() {
  ncclUniqueId nid;
  nccl_check(ncclGetUniqueId(&nid), "ncclGetUniqueId");
  NcclUniqueId id;
  std::memcpy(id.data(), &nid, id.size());
  return id;
}

std::unique_ptr<DeviceAllReduce> join(const NcclUniqueId& id, int rank, int size) {
  return std::make_unique<NcclAllReduce>(id, rank, size);
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
