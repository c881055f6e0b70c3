// fedpar compare's runs of one config but for their seed, taken together: a researcher's script
// runs each setting with several seeds, and the spread over seeds says whether a difference
// between settings is more than noise (the suites' "Over seeds" table, for any runs).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fedpar {

struct SeedRun {
  std::string label;
  // its settings that differ from the other runs', seed included; nullopt: its config was not
  // read, so it joins no group
  std::optional<std::map<std::string, std::string>> settings;
  double final = 0, best = 0;
  std::optional<double> target_round;  // the first evaluated round at the target
};

struct SeedGroups {
  std::string table;  // markdown; "" when no two runs differ in their seed alone
  nlohmann::json json = nlohmann::json::array();
};

// Groups the runs whose settings are alike but for `seed`, in the order of their first run, and
// tabulates each group of two seeds or more: its runs, the final value's mean, sample standard
// deviation and range, the best value's mean, and (target > 0) how many reached the target and
// their mean round. `value` writes a metric value as the table's other columns do.
SeedGroups seed_groups(const std::vector<SeedRun>& runs, const std::string& metric, double target,
                       const std::function<std::string(double)>& value);

}  // namespace fedpar
