// Fuzzes the CSV dataset reader (features, label[, user]); the first byte says whether a user
// column is expected.
#include "core/csv_dataset.h"
#include "fuzz/fuzz_files.h"

using namespace fedpar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool user = data[0] & 1;
  return fuzz::read_file_input(data + 1, size - 1, [&](const auto& path) {
    const Dataset d = read_csv_dataset(path, user);
    if (d.size() == 0 || d.x.size() != d.size() * d.dim() ||
        (!d.user.empty() && d.user.size() != d.size()))
      __builtin_trap();  // a dataset whose parts disagree
  });
}

std::vector<std::string> fedpar_fuzz_seeds() {
  return {std::string("\x00", 1) + "x1,x2,label\n0.5,1.5,0\n-1e3,2,1\n",
          std::string("\x01", 1) + "x,label,user\n1,0,3\n2,1,4\n\n3,2,3\r\n"};
}
