// Backend selection by name.
#include "core/backend.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/cpu_backend.h"

namespace fedpar {

std::vector<std::string> backend_names() { return {"cpu"}; }

std::unique_ptr<Backend> make_backend(std::string_view name, int threads) {
  if (name == "cpu") return make_cpu_backend(threads);
  if (name == "cuda")
    throw Error("device 'cuda': the CUDA training backend is not available in this version "
                "(valid devices: cpu)");
  throw Error(fmt::format("unknown device '{}' (valid devices: cpu)", name));
}

}  // namespace fedpar
