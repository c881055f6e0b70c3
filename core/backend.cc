// Backend selection by name: the CPU backend, and those other libraries register (kernels/).
#include "core/backend.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "core/check.h"
#include "core/cpu_backend.h"

namespace fedpar {
namespace {

// Function-local, so registrations from other translation units' static initialisers find it
// constructed whatever the order.
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}

}  // namespace

bool register_backend(const std::string& name, BackendFactory make) {
  FEDPAR_CHECK(name != "cpu" && !registry().count(name))
      << "backend '" << name << "' registered twice";
  registry()[name] = make;
  return true;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names = {"cpu"};
  for (const auto& [name, make] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, int threads) {
  if (name == "cpu") return make_cpu_backend(threads);
  if (auto it = registry().find(std::string(name)); it != registry().end())
    return it->second(threads);
  if (name == "cuda")
    throw Error(
        "device 'cuda': this build has no CUDA (nvcc was not found when it was configured; "
        "use --device cpu)");
  throw Error(fmt::format("unknown device '{}' (valid devices: {})", name,
                          fmt::join(backend_names(), ", ")));
}

}  // namespace fedpar
