// data_flags; see data_flags.h.
#include "experiments/cli/data_flags.h"

#include <fmt/format.h>

#include <filesystem>

namespace fedpar {

const std::vector<FlagKey>& data_flags() {
  static const std::vector<FlagKey> flags = {
      {"--dataset", "data.name", "mnist | synthetic | csv"},
      {"--data-dir", "data.dir",
       "folder holding mnist/ (default: $FEDPAR_DATA_DIR, else ./data when it holds mnist/, "
       "else the source tree's data/)"},
      {"--train-limit", "data.train_limit", "use the first n training samples"},
      {"--test-limit", "data.test_limit", "use the first n test samples"},
      {"--csv-train", "data.csv_train", "CSV training file"},
      {"--csv-test", "data.csv_test", "CSV test file"},
  };
  return flags;
}

void add_flag_keys(CLI::App* cmd, const std::vector<FlagKey>& flags,
                   std::vector<std::string>& flag_sets) {
  for (const FlagKey& f : flags) {
    const std::string key = f.key;
    cmd->add_option_function<std::string>(
        f.flag, [&flag_sets, key](const std::string& v) { flag_sets.push_back(key + "=" + v); },
        fmt::format("{} [{}]", f.help, key));
  }
}

CLI::Validator existing_config_file() {
  return CLI::Validator(
      [](const std::string& path) -> std::string {
        std::error_code ec;  // (a path too long or unreadable is "no config file", not a throw)
        if (std::filesystem::is_directory(path, ec))
          return fmt::format("{} is a folder, not a config file", path);
        if (std::filesystem::exists(path, ec)) return "";  // (a pipe too: fedpar run /dev/stdin)
        return fmt::format("no config file {}{}", path,
                           std::filesystem::is_regular_file(path + ".toml", ec)
                               ? fmt::format("; did you mean {}.toml?", path)
                               : "");
      },
      "FILE");
}

void add_run_config_args(CLI::App* cmd, std::string& config, std::vector<std::string>& sets,
                         std::vector<std::string>& flag_sets) {
  cmd->add_option("config", config, "TOML run config (see experiments/)")
      ->required()
      ->check(existing_config_file());
  cmd->add_option("--set", sets, "override a config key: --set rounds=5");
  add_flag_keys(cmd, data_flags(), flag_sets);
}

std::vector<std::string> flags_then_sets(const std::vector<std::string>& flag_sets,
                                         const std::vector<std::string>& sets) {
  std::vector<std::string> all = flag_sets;
  all.insert(all.end(), sets.begin(), sets.end());
  return all;
}

}  // namespace fedpar
