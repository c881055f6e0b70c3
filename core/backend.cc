// Backend selection by name: the CPU backend, and those other libraries register (kernels/).
#include "core/backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

#include "core/check.h"
#include "core/cpu_backend.h"

namespace fedpar {
namespace {

namespace fs = std::filesystem;

// Function-local, so registrations from other translation units' static initialisers find it
// constructed whatever the order.
std::map<std::string, BackendFactory>& registry() {
  static std::map<std::string, BackendFactory> r;
  return r;
}

#if defined(FEDPAR_CUDA_MODULE)
#define FEDPAR_CUDA_MODULE_NAME FEDPAR_CUDA_MODULE
// The fedpar command carries "cuda" as a module beside it, loaded when a process first asks for
// it; programs that link the kernels (tests, benchmarks) have it registered already. Returns
// false when there is no module to load.
bool load_cuda_module() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path module = exe.parent_path() / FEDPAR_CUDA_MODULE;
  if (ec || !fs::exists(module, ec)) return false;
  if (!dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL))
    throw Error(fmt::format("device 'cuda': cannot load {}: {}", module.string(), dlerror()));
  return true;
}
#else
#define FEDPAR_CUDA_MODULE_NAME "the CUDA module"
bool load_cuda_module() { return false; }
#endif

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
  if (name == "cuda" && load_cuda_module()) {  // the module's initialiser registers it
    if (auto it = registry().find("cuda"); it != registry().end()) return it->second(threads);
    throw Error("device 'cuda': " FEDPAR_CUDA_MODULE_NAME " loaded but registered no backend");
  }
  if (name == "cuda")
    throw Error(
        "device 'cuda': this build has no CUDA (nvcc was not found when it was configured; "
        "use --device cpu)");
  throw Error(fmt::format("unknown device '{}' (valid devices: {})", name,
                          fmt::join(backend_names(), ", ")));
}

}  // namespace fedpar
