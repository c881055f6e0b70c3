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

}  // namespace fedpar::testing
