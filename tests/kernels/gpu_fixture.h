// The GPU tests' fixture: a CPU backend (the reference) and a CUDA backend, or a clean skip that
// says why there is no device. Helpers move host vectors onto either backend and back.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/backend.h"
#include "kernels/cuda_info.h"

namespace fedpar::testing {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device (" << cuda_describe() << ")";
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
