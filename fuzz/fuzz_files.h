// The harness shape shared by the readers that take a path: the input goes into a file, the
// reader may answer with fedpar::Error (a clear message for the user); anything else it throws,
// and any crash, is a finding.
#pragma once

#include <cstdint>
#include <span>

#include "core/check.h"
#include "fuzz/fuzz_input.h"

namespace fedpar::fuzz {

template <typename Read>
int read_file_input(const uint8_t* data, size_t size, Read read) {
  try {
    read(input_file({data, size}));
  } catch (const Error& e) {
    refused(e.what());
  }
  return 0;
}

}  // namespace fedpar::fuzz
