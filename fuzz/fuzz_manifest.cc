// Fuzzes the manifest reader (manifest.json: every client's shard of the training set); the
// first byte sets the dataset size the indices must fall in.
#include "fuzz/fuzz_files.h"
#include "partitioners/manifest.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t dataset = 1 + data[0];
  return fuzz::read_file_input(data + 1, size - 1, [&](const auto& path) {
    for (const auto& c : read_manifest(path, dataset).clients)
      for (uint32_t i : c.indices)
        if (i >= dataset) __builtin_trap();  // an index outside the training set got through
  });
}

std::vector<std::string> fedpar_fuzz_seeds() {
  Manifest m;
  m.scheme = "iid";
  m.params = {{"clients", 2}};
  m.seed = 1;
  m.dataset_name = "synthetic";
  m.dataset_hash = "0123456789abcdef";
  m.clients = {{.id = 0, .indices = {0, 2}}, {.id = 1, .indices = {1, 3}}};
  m.finalize({0, 1, 0, 1}, 2);
  std::string seed(1, char(3));  // a dataset of 4 samples
  seed += to_json(m).dump();
  return {seed};
}
