// The process's peak resident memory, for the records of a run.
#pragma once

#include <cstdint>

namespace fedpar {

// This process's peak resident memory since it started, in bytes (VmHWM: unlike getrusage's
// ru_maxrss it does not carry over the peak of a parent that forked it), or 0 without /proc.
uint64_t peak_rss_bytes();

}  // namespace fedpar
