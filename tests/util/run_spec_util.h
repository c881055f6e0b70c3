// A run spec from "key=value" overrides of the defaults, and the error a bad one gets.
#pragma once

#include <string>
#include <vector>

#include "core/run_spec.h"
#include "tests/util/test_util.h"

namespace fedpar::testing {

inline RunSpec spec_with(const std::vector<std::string>& sets) {
  Config c = make_run_config();
  c.set_all(sets);
  return resolve_run_spec(c);
}

inline std::string refusal(const std::vector<std::string>& sets) {
  return error_of([&] { spec_with(sets); });
}

// What a run of the test config with `sets` warns of before round 1, less the model regime's
// note that its local defaults are FedSGD (which every config naming no local training gets, and
// which RunSpecValues.SettingsAnotherSettingReplacesAreNamed tests): the others' tests need not
// name local training to keep it out.
inline std::vector<std::string> warnings_beside_fedsgd(const std::vector<std::string>& sets) {
  Config c = make_run_config();
  c.set_all(sets);
  std::vector<std::string> out = run_warnings(c, resolve_run_spec(c));
  std::erase_if(out, [](const std::string& w) {
    return w.find("takes one full-batch step a round: FedSGD") != std::string::npos;
  });
  return out;
}

}  // namespace fedpar::testing
