// The suite report's results table: a run whose seconds count another clock than most runs' says
// which, and the rounds-to-target cells come from the first evaluation at the target.
#include "experiments/suite_report.h"

#include <gtest/gtest.h>

#include <string>

namespace fedpar {
namespace {

SuiteRun run(const std::string& label, const std::string& clock) {
  SuiteRun r{.label = label, .group = label, .clients = 4};
  r.curves.round = {10, 20};
  r.curves.accuracy = {80, 90};
  r.curves.test_loss = {0.5, 0.3};
  r.curves.mb = {5, 10};
  r.curves.seconds = {1.5, 3.0};
  r.curves.clock = clock;
  return r;
}

// The row of `label` in `table`.
std::string row(const std::string& table, const std::string& label) {
  const auto at = table.find("| " + label + " |");
  return at == std::string::npos ? "" : table.substr(at, table.find('\n', at) - at);
}

TEST(ResultsTable, ASecondsCellOnAnotherClockSaysWhich) {
  const std::string table =
      results_table({run("a", "simulated"), run("b", "simulated"), run("ring", "server")}, 85);
  EXPECT_NE(row(table, "a").find("| 20 | 3.0 | 10.0 |"), std::string::npos) << table;
  EXPECT_NE(row(table, "ring").find("| 20 | 3.0 (server time) | 10.0 |"), std::string::npos)
      << table;
  // one clock for all: no marker
  EXPECT_EQ(results_table({run("a", "server"), run("b", "server")}, 85).find(" time)"),
            std::string::npos);
}

}  // namespace
}  // namespace fedpar
