// The asynchronous regime's simulated clock against timelines worked out by hand.
#include "core/async_arrivals.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace fedpar {
namespace {

// 8 Mbit/s both ways, 10 ms each way: 1,000,000 bytes take 1 s.
NetworkSpec links(double jitter = 0) {
  return resolve_network(NetworkMode::kSimulated, JitterKind::kUniform, "custom", "", {},
                         {.down_bps = 8e6, .up_bps = 8e6, .latency_s = 0.01, .jitter_s = jitter}, 1,
                         3);
}

TEST(AsyncArrivals, UpdatesComeInTheOrderOfTheSimulatedClockNotOfTheirRealArrival) {
  const auto n = links();
  AsyncArrivals a(n, 1);
  a.dispatch(0, 0, 0, 1000000);  // TASK in at 1.01 s
  a.dispatch(1, 0, 0, 1000000);
  a.computed(0, 0.5, 1000000);  // back at 1.01 + 0.5 + 1.01 = 2.52
  // client 1's update is not in: with no compute it could be back at 1.02
  EXPECT_FALSE(a.next());
  a.computed(1, 2.0, 1000000);  // back at 4.02
  ASSERT_TRUE(a.next());
  EXPECT_EQ(a.next()->client, 0u);
  EXPECT_NEAR(a.next()->arrival, 2.52, 1e-12);
  a.applied(0);
  a.dispatch(0, 1, 2.52, 1000000);  // its second task: in at 3.53, could be back at 3.54
  EXPECT_FALSE(a.next());
  a.computed(0, 0.5, 1000000);  // back at 5.04: client 1 (4.02) first
  ASSERT_TRUE(a.next());
  EXPECT_EQ(a.next()->client, 1u);
  EXPECT_NEAR(a.next()->arrival, 4.02, 1e-12);
}

TEST(AsyncArrivals, AnUpdateThatCannotBeOvertakenGoesWithoutWaitingForTheRest) {
  const auto n = links();
  AsyncArrivals a(n, 1);
  a.dispatch(0, 0, 0, 1000);     // in at 0.011
  a.dispatch(1, 0, 0, 1000000);  // in at 1.01: back no earlier than 1.02
  a.computed(0, 0.1, 1000);      // back at 0.122
  ASSERT_TRUE(a.next());
  EXPECT_EQ(a.next()->client, 0u);
}

TEST(AsyncArrivals, TiesGoToTheLowerClient) {
  const auto n = links();
  AsyncArrivals a(n, 1);
  for (uint32_t c = 0; c < 3; ++c) a.dispatch(c, 0, 0, 1000000);
  a.computed(2, 0, 0);  // back at 1.02, the earliest client 0 or 1 could be
  EXPECT_FALSE(a.next());
  a.computed(1, 0, 0);
  EXPECT_FALSE(a.next());  // client 0 could still tie, and it goes first
  a.computed(0, 0, 0);
  EXPECT_EQ(a.next()->client, 0u);
  a.applied(0);
  EXPECT_EQ(a.next()->client, 1u);
  EXPECT_FALSE(a.holding(0));
  EXPECT_TRUE(a.holding(2));
}

TEST(AsyncArrivals, JitterIsDrawnPerClientAndTask) {
  const auto n = links(0.05);
  AsyncArrivals a(n, 7);
  a.dispatch(1, 4, 10, 1000000);
  a.computed(1, 0.25, 1000000);
  const double expected = 10 + 1.01 + jitter_seconds(JitterKind::kUniform, 0.05, 7, "down", 1, 4) +
                          0.25 + 1.01 + jitter_seconds(JitterKind::kUniform, 0.05, 7, "up", 1, 4);
  EXPECT_NEAR(a.next()->arrival, expected, 1e-12);
  EXPECT_NE(jitter_seconds(JitterKind::kUniform, 0.05, 7, "down", 1, 4),
            jitter_seconds(JitterKind::kUniform, 0.05, 7, "down", 1, 5));
}

TEST(AsyncArrivals, AnUpdateFromAClientWithoutATaskIsABug) {
  const auto n = links();
  AsyncArrivals a(n, 1);
  EXPECT_THROW(a.computed(0, 0, 0), Error);
  EXPECT_FALSE(a.next());
}

}  // namespace
}  // namespace fedpar
