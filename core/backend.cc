// Backend selection by name.
#include "core/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/cpu_backend.h"
#include "kernels/cuda_info.h"

namespace fedpar {

std::vector<std::string> backend_names() {
  if (cuda_compiled()) return {"cpu", "cuda"};
  return {"cpu"};
}

std::unique_ptr<Backend> make_backend(std::string_view name, int threads) {
  if (name == "cpu") return make_cpu_backend(threads);
  if (name == "cuda") return make_cuda_backend();
  throw Error(fmt::format("unknown device '{}' (valid devices: {})", name, fmt::join(backend_names(), ", ")));
}

}  // namespace fedpar
