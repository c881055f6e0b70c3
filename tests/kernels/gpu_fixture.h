// The GPU tests' fixture: a CPU backend (the reference) and a CUDA backend, or a clean skip that
// says why there is no device. Helpers move host vectors onto either backend and back.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "kernels/cuda_info.h"

// Skips the test without a CUDA device, or fails it where FEDPAR_REQUIRE_GPU is set
// (scripts/gpu-check.sh sets it: on the lent GPU machine a skip would hide a broken driver).
#define FEDPAR_SKIP_WITHOUT_CUDA_DEVICE()                                   \
  do {                                                                      \
    if (::fedpar::cuda_device_count() > 0) break;                           \
    if (std::getenv("FEDPAR_REQUIRE_GPU"))                                  \
      FAIL() << "no CUDA device (" << ::fedpar::cuda_describe() << ")";     \
    GTEST_SKIP() << "no CUDA device (" << ::fedpar::cuda_describe() << ")"; \
  } while (false)

namespace fedpar::testing {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    FEDPAR_SKIP_WITHOUT_CUDA_DEVICE();
    cpu = make_backend("cpu");
    gpu = make_backend("cuda");
  }

  template <typename T>
  static DeviceArray<T> on(Backend& be, const std::vector<T>& host) {
    DeviceArray<T> d(be, host.size());
    if (!host.empty()) be.upload(d.data(), host.data(), host.size() * sizeof(T));
    return d;
  }

  std::unique_ptr<Backend> cpu, gpu;
};

}  // namespace fedpar::testing
