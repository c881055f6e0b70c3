// The run README's line of sizes on the wire: each against the model's float32 bytes, in kB
// below a megabyte, "more" where the codec grew what it sends.
#include "server/run_readme.h"

#include <gtest/gtest.h>

#include "tests/util/run_spec_util.h"

namespace fedpar {
namespace {

RoundRecord round_with(std::vector<uint64_t> up, std::optional<uint64_t> down = {}) {
  RoundRecord r;
  r.round = 7;
  r.clients.emplace();
  for (uint64_t b : up) r.clients->push_back({.bytes_up = b});
  r.bytes_down_per_task = down;
  return r;
}

TEST(CompressionLine, SizesAgainstFloat32SayLessOrMore) {
  const uint64_t d = 199210;  // the 2NN: 796,840 bytes in float32
  const RunSpec topk = testing::spec_with({"compression.uplink=topk"});
  EXPECT_EQ(compression_line(topk, round_with({10000, 10500, 11000}), d),
            "- on the wire in round 7, against the model's 0.8 MB of float32: an UPDATE 10.5 kB "
            "(`compression.uplink = topk`, the round's median; 75.9x less), its headers "
            "included\n");
  // QSGD's 101,410 bytes once read "0.1 MB"
  const RunSpec qsgd = testing::spec_with({"compression.uplink=qsgd"});
  EXPECT_NE(compression_line(qsgd, round_with({101410}), d).find("an UPDATE 101.4 kB"),
            std::string::npos);
  // top-k at ratio 1 sends indices too: 996,298 bytes, which once read "0.8x less"
  EXPECT_NE(compression_line(topk, round_with({996298}), d)
                .find("an UPDATE 996.3 kB (`compression.uplink = topk`, the round's median; 1.25x "
                      "more: the codec grew it)"),
            std::string::npos);
  // a delta downlink's change is its frame alone, not the TASK's message
  const RunSpec delta =
      testing::spec_with({"compression.downlink=topk", "compression.downlink_delta=true"});
  EXPECT_EQ(compression_line(delta, round_with({796900}, 10191), d),
            "- on the wire in round 7, against the model's 0.8 MB of float32: a TASK's model "
            "change 10.2 kB (`compression.downlink = topk`; 78.2x less), the model frame alone\n");
  EXPECT_EQ(compression_line(testing::spec_with({}), round_with({796900}), d), "");
}

// A ring's README says what each worker sent around it (it only pointed to metrics.jsonl),
// against float32's 2(N-1)/N of the model: 2 x 3/4 x 796,840 bytes at N = 4.
TEST(CompressionLine, ARingSaysWhatEachWorkerSent) {
  RoundRecord r;
  r.round = 3;
  r.workers.emplace();
  for (uint64_t b : {597000, 597678, 598000, 597678}) r.workers->push_back({.ring_bytes_sent = b});
  EXPECT_EQ(compression_line(testing::spec_with({"regime=gradient", "topology=allreduce",
                                                 "processes=4", "compression.uplink=fp16"}),
                             r, 199210),
            "- on the ring in round 3: each worker sent 597.7 kB to its neighbour (the median; "
            "`compression.uplink = fp16`), against float32's 2(N-1)/N of the model, 1.20 MB: 2.0x "
            "less\n");
  // uncompressed: float32's payload and the frames' headers, not "the codec grew it"
  for (auto& w : *r.workers) w.ring_bytes_sent = 1195308;  // 2 x 3/4 x 796,840 + 48
  EXPECT_EQ(
      compression_line(testing::spec_with({"regime=gradient", "topology=allreduce", "processes=4"}),
                       r, 199210),
      "- on the ring in round 3: each worker sent 1.20 MB to its neighbour (the median; "
      "`compression.uplink = none`), against float32's 2(N-1)/N of the model, 1.20 MB: the "
      "payload and 48 bytes of frame headers\n");
  r.workers->resize(1);  // a ring of one sends nothing
  EXPECT_EQ(
      compression_line(testing::spec_with({"regime=gradient", "topology=allreduce"}), r, 199210),
      "");
}

}  // namespace
}  // namespace fedpar
