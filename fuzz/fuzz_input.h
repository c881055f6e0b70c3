// What every fuzz harness shares: the input format for multi-frame messages, a file to hand the
// readers that take a path, and the seeds a harness writes into its corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar::fuzz {

// Frames from fuzz bytes: [u8 frame count] then per frame [u32 little-endian length][bytes];
// a length past the end takes what is left, missing frames are empty. Any input is some message,
// so the fuzzer spends no time on a framing it cannot get right.
std::vector<std::vector<uint8_t>> split_frames(std::span<const uint8_t> data);
// The inverse, for seeds.
std::string join_frames(const std::vector<std::vector<uint8_t>>& frames);
std::vector<std::span<const uint8_t>> spans(const std::vector<std::vector<uint8_t>>& frames);

// A file holding `data`, in a folder private to this process (tmpfs when there is one), for the
// readers that take a path: they are fuzzed as they are called, through the file.
const std::filesystem::path& input_file(std::span<const uint8_t> data);

// What a harness says when its input is refused (a clear error, as it should be): printed by the
// replay main's --verbose, silent under libFuzzer. Shows that seeds reach past the first check.
void refused(std::string_view why);
void set_verbose(bool on);

}  // namespace fedpar::fuzz

// Each harness defines its seeds (written by `fuzz_replay_NAME --write-seeds DIR`).
std::vector<std::string> fedpar_fuzz_seeds();
