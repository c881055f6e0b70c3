// The data flags every command that loads data takes (--data-dir, --dataset, --train-limit, ...):
// one name per config key, so `fedpar train`, `run`, `suite` and `server` read them alike.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fedpar {

struct FlagKey {
  const char* flag;  // "--epochs"
  const char* key;   // "train.epochs"
  const char* help;
};

// The [data] flags and their keys.
const std::vector<FlagKey>& data_flags();

// Registers `flags` on `cmd`; each given flag appends "key=value" to `flag_sets`.
void add_flag_keys(CLI::App* cmd, const std::vector<FlagKey>& flags,
                   std::vector<std::string>& flag_sets);

// A config file that exists (CLI11's ExistingFile), or an error that names a near one: NAME.toml
// for NAME.
CLI::Validator existing_config_file();

// The positional run config, --set KEY=VALUE and the data flags: what `fedpar run` and `fedpar
// launch` take alike.
void add_run_config_args(CLI::App* cmd, std::string& config, std::vector<std::string>& sets,
                         std::vector<std::string>& flag_sets);

// The flags' assignments, then the --set ones: a --set of the same key wins over its flag,
// whatever their order on the command line (every command alike).
std::vector<std::string> flags_then_sets(const std::vector<std::string>& flag_sets,
                                         const std::vector<std::string>& sets);

}  // namespace fedpar
