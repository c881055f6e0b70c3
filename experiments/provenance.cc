// Reports' provenance; see provenance.h.
#include "experiments/provenance.h"

#include <fmt/format.h>

#include "core/build_info.h"

namespace fedpar {

nlohmann::json provenance_json() {
  nlohmann::json j = {{"build_vector_units", build_vector_units()},
                      {"blas_kernels", blas_kernels()},
                      {"machine", machine_description()}};
  if (!source_commit().empty()) j["source_commit"] = source_commit();
  if (const auto load = load_average()) j["load_average"] = *load;
  return j;
}

std::string provenance_line() {
  const auto load = load_average();
  return fmt::format("Made by fedpar {} on {}{}.", build_description(), machine_description(),
                     load ? fmt::format("; load {:.2f} at the end", *load) : "");
}

}  // namespace fedpar
