// What CUDA the build and the machine offer, and the error without a device.
#include "kernels/cuda_info.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/backend.h"
#include "core/check.h"

namespace fedpar {
namespace {

TEST(CudaInfo, DescribesItself) {
  EXPECT_FALSE(cuda_describe().empty());
  if (!cuda_compiled()) {
    EXPECT_EQ(cuda_device_count(), 0);
  }
  const auto names = backend_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "cuda"), cuda_compiled() ? 1 : 0);
}

TEST(CudaInfo, CudaBackendWithoutADeviceSaysWhyAndWhatToUse) {
  if (cuda_device_count() > 0) {
    const auto be = make_backend("cuda");
    EXPECT_EQ(be->name(), "cuda");
    EXPECT_NE(be->describe().find("cuBLAS"), std::string::npos) << be->describe();
    return;
  }
  try {
    make_backend("cuda");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fedpar
