// WorkerVelocity; see worker_velocity.h.
#include "server/worker_velocity.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

void WorkerVelocity::save(Checkpoint& c) const {
  if (!whole.empty()) c.f32[entry_] = whole;
}

void WorkerVelocity::load(const Checkpoint& c, size_t num_params) {
  if (const auto it = c.f32.find(entry_); it != c.f32.end()) whole = it->second;
  if (!whole.empty() && whole.size() != num_params)
    throw Error(fmt::format("the checkpoint's {} has {} values, the model {}", entry_, whole.size(),
                            num_params));
}

std::shared_ptr<const std::vector<std::vector<float>>> WorkerVelocity::first_task(
    const std::vector<float>& params) {
  if (started_) return nullptr;
  started_ = true;
  std::vector<std::vector<float>> v = {params};
  if (!whole.empty()) v.push_back(whole);
  return std::make_shared<const std::vector<std::vector<float>>>(std::move(v));
}

}  // namespace fedpar
