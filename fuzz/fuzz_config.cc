// Fuzzes the run configuration: TOML text merged over the defaults and resolved, as `fedpar run`
// reads a file and as every client reads the config in its WELCOME.
#include <string_view>

#include "core/run_spec.h"
#include "fuzz/fuzz_files.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)run_spec_from_toml({reinterpret_cast<const char*>(data), size}, "fuzz.toml");
  } catch (const Error& e) {
    fuzz::refused(e.what());
  }
  return 0;
}

std::vector<std::string> fedpar_fuzz_seeds() {
  return {"rounds = 5\nregime = 'model'\n[partition]\nclients = 4\nscheme = 'dirichlet'\n",
          "regime = 'gradient'\ntopology = 'allreduce'\n[sgd]\nbatch = 20\n[optimizer]\n"
          "lr = 0.05\nschedule = 'cosine'\n",
          "[compression]\nuplink = 'topk'\nratio = 0.1\n",
          "[local]\nalgorithm = 'scaffold'\nepochs = 2\n[server_optimizer]\nname = 'adam'\n",
          run_defaults()};
}
