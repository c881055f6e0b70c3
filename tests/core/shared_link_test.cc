// The fluid max-min fair link against cases worked out by hand.
#include "core/shared_link.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/check.h"

namespace fedpar {
namespace {

constexpr double kMb = 1e6;  // 1,000,000 bytes: 8 Mbit

TEST(SharedLink, OneFlowGoesAtTheSlowerOfItsCapAndTheLink) {
  EXPECT_DOUBLE_EQ(shared_link_finish({{0, 1000000, 8e6}}, 16e6)[0], 1.0);
  EXPECT_DOUBLE_EQ(shared_link_finish({{0, 1000000, 16e6}}, 8e6)[0], 1.0);
  EXPECT_DOUBLE_EQ(shared_link_finish({{2.5, 1000000, 8e6}}, 8e6)[0], 3.5);
}

TEST(SharedLink, EqualFlowsShareEquallyAndEndTogether) {
  const auto f = shared_link_finish(
      {{0, 1000000, 1e9}, {0, 1000000, 1e9}, {0, 1000000, 1e9}, {0, 1000000, 1e9}}, 8e6);
  for (double t : f) EXPECT_NEAR(t, 4.0, 1e-12);  // 32 Mbit through 8 Mbit/s
}

TEST(SharedLink, ThreeEqualFlowsEndTogetherThoughAThirdIsNotExact) {
  const auto f =
      shared_link_finish({{0, 1000000, 1e9}, {0, 1000000, 1e9}, {0, 1000000, 1e9}}, 10e6);
  EXPECT_NEAR(f[0], 2.4, 1e-12);  // 24 Mbit through 10 Mbit/s
  EXPECT_EQ(f[0], f[1]);
  EXPECT_EQ(f[1], f[2]);
}

TEST(SharedLink, TwoLevelsOfCapsFillTheLinkInTurn) {
  // 10 Mbit/s among caps 1, 3 and 100 Mbit/s: rates 1, 3, 6. Sizes 1, 3 and 12 Mbit: the first
  // two end at 1 s; the third has 6 Mbit left, alone at 10: at 1.6 s.
  const auto f =
      shared_link_finish({{0, 125000, 1e6}, {0, 375000, 3e6}, {0, 1500000, 100e6}}, 10e6);
  EXPECT_NEAR(f[0], 1.0, 1e-12);
  EXPECT_NEAR(f[1], 1.0, 1e-12);
  EXPECT_NEAR(f[2], 1.6, 1e-12);
}

TEST(SharedLink, AFlowStartingAsAnotherEndsHasTheLinkToItself) {
  const auto f = shared_link_finish({{0, 1000000, 1e9}, {1, 1000000, 1e9}, {0.5, 0, 1e9}}, 8e6);
  EXPECT_NEAR(f[0], 1.0, 1e-12);
  EXPECT_NEAR(f[1], 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(f[2], 0.5);  // nothing to send, though the link is busy
}

TEST(SharedLink, RefusesALinkOrAFlowWithoutBandwidth) {
  EXPECT_THROW(shared_link_finish({{0, 1, 1e6}}, 0), Error);
  EXPECT_THROW(shared_link_finish({{0, 1, 0}}, 1e6), Error);
  EXPECT_THROW(shared_link_finish({{-1, 1, 1e6}}, 1e6), Error);
}

TEST(SharedLink, ACappedFlowLeavesItsShareToTheOthers) {
  // 12 Mbit/s link; one flow capped at 2: the other gets 10. The small one (2 Mbit) ends at 1 s,
  // then the big one (24 Mbit, 10 sent) has 12 Mbit/s: 14 Mbit more take 7/6 s.
  const auto f = shared_link_finish({{0, 250000, 2e6}, {0, 3000000, 1e9}}, 12e6);
  EXPECT_NEAR(f[0], 1.0, 1e-12);
  EXPECT_NEAR(f[1], 1.0 + 14.0 / 12.0, 1e-12);
}

TEST(SharedLink, AFlowThatEntersLaterSharesFromThenOn) {
  // 8 Mbit/s: the first flow alone for 0.5 s (4 Mbit of its 8), then both at 4 Mbit/s: the first
  // ends at 1.5 s; the second has 4 of 8 Mbit left, alone at 8: at 2.0 s.
  const auto f = shared_link_finish({{0, 1000000, 1e9}, {0.5, 1000000, 1e9}}, 8e6);
  EXPECT_NEAR(f[0], 1.5, 1e-12);
  EXPECT_NEAR(f[1], 2.0, 1e-12);
  // and in the other order of the list: the same times, each to its own flow
  const auto g = shared_link_finish({{0.5, 1000000, 1e9}, {0, 1000000, 1e9}}, 8e6);
  EXPECT_NEAR(g[0], 2.0, 1e-12);
  EXPECT_NEAR(g[1], 1.5, 1e-12);
}

TEST(SharedLink, IdleGapsAndEmptyFlows) {
  const auto f = shared_link_finish({{0, 1000000, 8e6}, {5, 0, 8e6}, {10, 1000000, 8e6}}, 8e6);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 5.0);
  EXPECT_DOUBLE_EQ(f[2], 11.0);
  EXPECT_TRUE(shared_link_finish({}, 8e6).empty());
}

// Many flows of different sizes and start times. Uncapped, the link is never idle while one waits
// and never faster than its capacity: the last ends exactly when the total bits allow. Capped,
// each ends no earlier than its own cap allows, and the last no earlier than the link allows.
TEST(SharedLink, ConservesTheLinksWork) {
  std::vector<Flow> flows;
  double bits = 0;
  for (int i = 0; i < 50; ++i) {
    flows.push_back({0.01 * (i % 7), uint64_t(kMb * (1 + i % 5)), 1e12});
    bits += 8 * kMb * (1 + i % 5);
  }
  const auto last = [](const std::vector<double>& f) { return *std::ranges::max_element(f); };
  EXPECT_NEAR(last(shared_link_finish(flows, 20e6)), bits / 20e6, 1e-9);
  for (size_t i = 0; i < flows.size(); ++i) flows[i].cap_bps = 1e6 * double(1 + i % 13);
  const auto f = shared_link_finish(flows, 20e6);
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_GE(f[i], flows[i].start_seconds + double(flows[i].bytes) * 8 / flows[i].cap_bps - 1e-9);
  EXPECT_GE(last(f), bits / 20e6);
}

}  // namespace
}  // namespace fedpar
