// SCAFFOLD's control variates; see scaffold.h.
#include "core/scaffold.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

std::vector<float> scaffold_correction(std::span<const float> c, std::span<const float> c_i) {
  FEDPAR_CHECK(c.size() == c_i.size()) << "controls of " << c.size() << " and " << c_i.size();
  std::vector<float> out(c.size());
  for (size_t k = 0; k < c.size(); ++k) out[k] = c[k] - c_i[k];
  return out;
}

std::vector<float> scaffold_control_change(std::span<const float> c, std::span<const float> delta,
                                           double work, float lr) {
  FEDPAR_CHECK(c.size() == delta.size())
      << "control of " << c.size() << ", delta of " << delta.size();
  FEDPAR_CHECK(work >= 1 && lr > 0) << "SCAFFOLD needs work >= 1 and lr > 0";
  const double inv = 1.0 / (work * double(lr));
  std::vector<float> out(c.size());
  for (size_t k = 0; k < c.size(); ++k) out[k] = float(-double(c[k]) - double(delta[k]) * inv);
  return out;
}

void scaffold_server_control(std::span<const ClientUpdate> changes, Weighting w,
                             double total_weight, std::span<float> c) {
  FEDPAR_CHECK(total_weight > 0) << "no clients";
  std::vector<double> sum(c.size(), 0.0);
  for (const ClientUpdate& u : changes) {
    if (u.values.size() != c.size())
      throw Error(fmt::format("client {}'s control change has {} values, the model {}", u.client,
                              u.values.size(), c.size()));
    const double p = raw_weight(w, u.num_samples) / total_weight;
    for (size_t k = 0; k < c.size(); ++k) sum[k] += p * double(u.values[k]);
  }
  for (size_t k = 0; k < c.size(); ++k) c[k] = float(double(c[k]) + sum[k]);
}

}  // namespace fedpar
