// Run records: what the writer writes the strict reader reads back field for field; a renamed,
// missing or mistyped key, or another schema version, is an Error naming the place and the key
// (before this, a renamed key read back as 0).
#include "core/run_records.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/check.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::error_of;

RoundRecord sample_round() {
  RoundRecord r{.round = 3,
                .topology = "parameter-server",
                .train_loss = 0.25,
                .wait_seconds = 0.5,
                .bytes_sent_total = 1000,
                .bytes_received_total = 2000,
                .server_bytes_sent = 10,
                .server_bytes_received = 20};
  r.processes = {{0, 2, 10, 20, false}, {1, 0, 0, 0, true}};
  r.test_accuracy = 0.875;
  r.missing = std::vector<uint32_t>{5};
  r.clients = std::vector<ClientRecord>{{4, 1, 800, 0.01, 600, 64, 128, 0.3, 1.5}};
  r.update_drift = 0.125;
  return r;
}

TEST(RunRecords, RoundRoundTripsFieldForField) {
  const RoundRecord r = sample_round();
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["schema"], kResultsSchema);
  EXPECT_EQ(j["kind"], "round");
  EXPECT_FALSE(j.contains("test_loss"));  // absent optionals are not written as 0
  const RoundRecord b = round_from_json(j, "here");
  EXPECT_EQ(b.round, 3);
  EXPECT_EQ(b.topology, "parameter-server");
  EXPECT_EQ(b.processes.size(), 2u);
  EXPECT_TRUE(b.processes[1].lost);
  EXPECT_EQ(b.test_accuracy, std::optional<double>(0.875));
  EXPECT_FALSE(b.test_loss.has_value());
  ASSERT_TRUE(b.clients.has_value());
  EXPECT_EQ((*b.clients)[0].client, 4u);
  EXPECT_DOUBLE_EQ((*b.clients)[0].update_norm, 1.5);
  EXPECT_EQ(b.missing, std::optional<std::vector<uint32_t>>(std::vector<uint32_t>{5}));
  EXPECT_EQ(nlohmann::json(to_json(b)), j);  // and back to the same JSON
  // a metrics line reads in the fields' order, the round first (not alphabetically)
  EXPECT_TRUE(to_json(b).dump().starts_with(R"({"round":3,"topology":"parameter-server",)"))
      << to_json(b).dump();
  EXPECT_TRUE(to_json(b).dump().ends_with(R"("schema":1,"kind":"round"})")) << to_json(b).dump();
}

TEST(RunRecords, SummaryCarriesItsFinalRound) {
  RunSummary s{
      .model_hash = "abc", .parameters = 199210, .rounds_run = 3, .clients = 4, .processes = 2};
  s.hosts = {{1, {0, 1}, false}, {2, {2, 3}, false}};
  s.final = sample_round();
  const RunSummary b = summary_from_json(to_json(s), "summary.json");
  EXPECT_EQ(b.model_hash, "abc");
  EXPECT_EQ(b.parameters, std::optional<uint64_t>(199210));
  EXPECT_EQ(b.hosts[1].clients, (std::vector<uint32_t>{2, 3}));
  ASSERT_TRUE(b.final.has_value());
  EXPECT_EQ(b.final->test_accuracy, std::optional<double>(0.875));
}

TEST(RunRecords, TheReaderIsStrict) {
  const nlohmann::json good = to_json(sample_round());
  auto without = [&](const char* key) {
    nlohmann::json j = good;
    j.erase(key);
    return j;
  };
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = v;
    return j;
  };
  EXPECT_EQ(error_of([&] { round_from_json(without("wait_seconds"), "m.jsonl line 2"); }),
            "m.jsonl line 2: key 'wait_seconds' is missing");
  EXPECT_EQ(error_of([&] { round_from_json(with("train_los", 0.1), "m.jsonl line 2"); }),
            "m.jsonl line 2: key 'train_los' is not a field of schema 1");
  EXPECT_EQ(error_of([&] { round_from_json(with("round", "three"), "x"); }),
            "x: key 'round' has the wrong type (string)");
  EXPECT_EQ(error_of([&] { round_from_json(with("schema", 0), "x"); }),
            "x: schema 0 (this fedpar reads schema 1; rerun the run with it)");
  nlohmann::json bad_client = good;
  bad_client["clients"][0]["bytes"] = 1;  // a key inside a nested record
  EXPECT_EQ(error_of([&] { round_from_json(bad_client, "x"); }),
            "x, clients[0]: key 'bytes' is not a field of schema 1");
  EXPECT_EQ(error_of([&] { round_from_json(with("kind", "summary"), "x"); }),
            "x: a 'summary' record where a 'round' was expected");
}

// docs/metrics.md describes every key a run writes: a field added to a record without its line
// there fails here.
TEST(RunRecords, EveryKeyIsDescribedInDocsMetrics) {
  const std::string doc = testing::slurp(std::string(FEDPAR_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_FALSE(doc.empty());
  const auto round = round_record_keys(), summary = run_summary_keys();
  EXPECT_GT(round.size(), 40u);  // nested keys included: processes[].bytes_down, ...
  for (const auto& keys : {round, summary})
    for (const std::string& key : keys)
      EXPECT_NE(doc.find("`" + key + "`"), std::string::npos)
          << key << " is not in docs/metrics.md";
  EXPECT_NE(std::find(round.begin(), round.end(), "workers[].ring_bytes_sent"), round.end());
}

}  // namespace
}  // namespace fedpar
