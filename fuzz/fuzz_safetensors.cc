// Fuzzes the safetensors reader (model files given to model.init_from or written by runs).
#include "core/safetensors.h"
#include "fuzz/fuzz_files.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::read_file_input(data, size, [](const auto& path) {
    for (const auto& [name, t] : load_safetensors(path).tensors) {
      uint64_t count = 1;
      for (auto d : t.shape)  // a shape whose size overflows must have been refused
        if (d < 0 || __builtin_mul_overflow(count, uint64_t(d), &count)) __builtin_trap();
      if (t.values.size() != count) __builtin_trap();  // a shape that does not hold its values
    }
  });
}

std::vector<std::string> fedpar_fuzz_seeds() {
  auto file = [](const std::string& header, size_t data_bytes) {
    const uint64_t n = header.size();
    return std::string(reinterpret_cast<const char*>(&n), 8) + header +
           std::string(data_bytes, '\x01');
  };
  return {file(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
               R"("b":{"dtype":"F32","shape":[3],"data_offsets":[24,36]},)"
               R"("__metadata__":{"format":"pt"}})",
               36),
          file(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", 4)};
}
