// GPU kernels against their CPU references; every test skips cleanly without a CUDA device.
#include <gtest/gtest.h>

#include "kernels/cuda_info.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

TEST(CudaInfo, DescribesItself) {
  const std::string d = cuda_describe();
  EXPECT_FALSE(d.empty());
  if (!cuda_compiled()) {
    EXPECT_EQ(cuda_device_count(), 0);
  }
}

TEST(KernelParity, AxpyMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device (" << cuda_describe() << ")";
  for (size_t n : {size_t(0), size_t(1), size_t(255), size_t(256), size_t(100003)}) {
    auto x = testing::random_vector(n, 1), y = testing::random_vector(n, 2);
    auto want = y;
    axpy_ref(want.data(), x.data(), 0.37f, n);
    axpy_on_device(y, x, 0.37f);
    EXPECT_TRUE(testing::all_close(y, want, 1e-6, 1e-5)) << "n=" << n;
  }
}

}  // namespace
}  // namespace fedpar
