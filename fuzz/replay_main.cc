// The main of a harness built without libFuzzer (any compiler): runs every file given, or every
// file in the folders given, through the harness once, so the corpus and every crash found run as
// regression tests in the ordinary build. `--write-seeds DIR` writes the harness's seeds there;
// `--verbose` says why each refused input was refused.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  std::fprintf(stderr, "%s (%zu bytes)\n", file.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--verbose") {  // say why each refused input was refused
    fedpar::fuzz::set_verbose(true);
    args.erase(args.begin());
  }
  if (args.size() == 2 && args[0] == "--write-seeds") {
    fs::create_directories(args[1]);
    const auto seeds = fedpar_fuzz_seeds();
    for (size_t i = 0; i < seeds.size(); ++i)
      std::ofstream(fs::path(args[1]) / ("seed-" + std::to_string(i)), std::ios::binary)
          << seeds[i];
    std::printf("wrote %zu seeds to %s\n", seeds.size(), args[1].c_str());
    return 0;
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: %s [--verbose] FILE_OR_FOLDER... | --write-seeds FOLDER\n",
                 argv[0]);
    return 2;
  }
  size_t n = 0;
  for (const fs::path a : args) {
    if (!fs::is_directory(a)) {
      replay(a), ++n;
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(a))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) replay(f), ++n;
  }
  if (n == 0) {
    std::fprintf(stderr, "no inputs found in the arguments\n");
    return 1;
  }
  std::printf("replayed %zu inputs without a crash\n", n);
  return 0;
}
