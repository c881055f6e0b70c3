// allreduce.backend = "nccl" below the runtime: the unique id (made without a GPU, carried as hex
// in the RING message) and, on a GPU, a communicator's sum. One GPU allows one rank (NCCL refuses
// two ranks on one device), so the sum here is a ring of one: the bytes must come back unchanged.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/check.h"
#include "core/device_collective.h"
#include "kernels/cuda_info.h"
#include "tests/kernels/gpu_fixture.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;

TEST(NcclId, TravelsAsHexAndMalformedHexIsRefused) {
  NcclUniqueId id;
  std::iota(id.begin(), id.end(), uint8_t(0x70));  // 0x70 .. 0xef: every digit 0-f, low nibble
  const std::string hex = nccl_id_hex(id);
  ASSERT_EQ(hex.size(), 256u);
  EXPECT_EQ(hex.substr(0, 6), "707172");
  EXPECT_EQ(nccl_id_from_hex(hex), id);
  EXPECT_NE(error_of([&] { nccl_id_from_hex(hex.substr(1)); }).find("256 hex digits, got 255"),
            std::string::npos);
  std::string upper = hex;
  upper[10] = 'A';
  EXPECT_NE(error_of([&] { nccl_id_from_hex(upper); }).find("no lowercase hex digit"),
            std::string::npos);
}

TEST(Nccl, MakesDistinctIdsWithoutAGpuOrSaysWhyItCannot) {
#if defined(FEDPAR_HAVE_NCCL)
  const NcclApi& api = nccl();
  EXPECT_EQ(api.version.rfind("NCCL 2.", 0), 0u) << api.version;
  const NcclUniqueId a = api.unique_id(), b = api.unique_id();
  EXPECT_NE(a, b);  // each names its own bootstrap root
  EXPECT_NE(a, NcclUniqueId{});
#else
  const std::string why = error_of([] { nccl(); });
  EXPECT_TRUE(why.find("built without NCCL") != std::string::npos ||
              why.find("has no CUDA") != std::string::npos)
      << why;
#endif
}

TEST(Nccl, ARingOfOneGivesBackItsBytes) {
#if !defined(FEDPAR_HAVE_NCCL)
  GTEST_SKIP() << "built without NCCL";
#else
  FEDPAR_SKIP_WITHOUT_CUDA_DEVICE();
  const auto comm = nccl().join(nccl().unique_id(), 0, 1, 10);
  for (const size_t n : {size_t(10), size_t(1) << 20, size_t(3)}) {  // grows, then reuses
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = float(i % 977) * 0.37f - 11.0f;
    const std::vector<float> want = v;
    comm->sum(v);
    EXPECT_EQ(v, want) << n;
  }
#endif
}

TEST(Nccl, WithoutAGpuJoiningSaysSo) {
#if !defined(FEDPAR_HAVE_NCCL)
  GTEST_SKIP() << "built without NCCL";
#else
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(error_of([] { nccl().join(nccl().unique_id(), 0, 1, 10); }).find("sees no CUDA device"),
            std::string::npos);
#endif
}

}  // namespace
}  // namespace fedpar
