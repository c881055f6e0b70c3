// Backend selection by name: the CPU backend, and those other libraries register (kernels/).
#include "core/backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

#include "core/check.h"
#include "core/cpu_backend.h"
#include "core/executable.h"

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
// The fedpar command carries "cuda" as a module beside it, loaded when a process first asks for
// it; programs that link the kernels (tests, benchmarks) have it registered already.
fs::path cuda_module() { return executable_path().parent_path() / FEDPAR_CUDA_MODULE; }
bool cuda_module_expected() { return true; }
#else
fs::path cuda_module() { return {}; }
bool cuda_module_expected() { return false; }
#endif

// Loads the CUDA module, whose initialiser registers "cuda"; Error when it is missing or fails.
void load_cuda_module(std::string_view what) {
  const fs::path module = cuda_module();
  std::error_code ec;
  if (!fs::exists(module, ec))
    throw Error(fmt::format(
        "{}: this fedpar's CUDA backend {} is missing (it is built beside the binary; rebuild, "
        "or use --device cpu)",
        what, module.string()));
  if (!dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL))
    throw Error(fmt::format("{}: cannot load {}: {}", what, module.string(), dlerror()));
  if (!registry().count("cuda"))
    throw Error(fmt::format("{}: {} registered no backend", what, module.string()));
}

}  // namespace

void Backend::gather_rows(float*, const float*, std::span<const uint32_t>, size_t) {
  FEDPAR_CHECK(false) << name() << "'s memory is not host memory: its batches are staged";
}

bool register_backend(const std::string& name, BackendFactory make) {
  FEDPAR_CHECK(name != "cpu" && !registry().count(name))
      << "backend '" << name << "' registered twice";
  registry()[name] = make;
  return true;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names = {"cpu"};
  for (const auto& [name, make] : registry()) names.push_back(name);
  if (cuda_module_expected() && !registry().count("cuda")) names.push_back("cuda");  // loadable
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, int threads) {
  if (name == "cpu") return make_cpu_backend(threads);
  if (auto it = registry().find(std::string(name)); it != registry().end())
    return it->second(threads);
  if (name == "cuda" && cuda_module_expected()) {
    load_cuda_module("device 'cuda'");
    return registry().at("cuda")(threads);
  }
  if (name == "cuda")
    throw Error(
        "device 'cuda': this build has no CUDA (nvcc was not found when it was configured; "
        "use --device cpu)");
  throw Error(fmt::format("unknown device '{}' (valid devices: {})", name,
                          fmt::join(backend_names(), ", ")));
}

void ensure_cuda_module(std::string_view what) {
  if (registry().count("cuda")) return;  // linked in, or loaded already
  if (!cuda_module_expected())
    throw Error(fmt::format(
        "{}: this build has no CUDA (nvcc was not found when it was configured)", what));
  load_cuda_module(what);
}

}  // namespace fedpar
