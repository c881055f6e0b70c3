// Runs the real fedpar binary (FEDPAR_BIN, set by CMake) as a user would, capturing its output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/util/test_util.h"

namespace fedpar::testing {

struct CliRun {
  int code;
  std::string out, err;
};

// `tmp` receives the captured stdout.txt and stderr.txt.
inline CliRun run_fedpar(const std::string& args, const std::filesystem::path& tmp) {
  const auto out = tmp / "stdout.txt", err = tmp / "stderr.txt";
  const std::string cmd =
      std::string(FEDPAR_BIN) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// `fedpar run` of the config `toml` (written to tmp/run.toml) as the run `name`, whose folder is
// tmp/res/<name>, then `sets` (" --set KEY=VALUE ...").
inline CliRun run_config(const std::filesystem::path& tmp, const std::string& toml,
                         const std::string& name, const std::string& sets) {
  std::ofstream(tmp / "run.toml") << toml;
  return run_fedpar("run " + (tmp / "run.toml").string() + " --set results_dir=" +
                        (tmp / "res").string() + " --set name=" + name + " " + sets,
                    tmp);
}

// `fedpar args` refused: it exits with `code` and its stderr holds `message`. Returns the run, for
// what else a caller checks.
inline CliRun expect_refused(const std::string& args, const std::filesystem::path& tmp, int code,
                             const std::string& message) {
  CliRun r = run_fedpar(args, tmp);
  EXPECT_EQ(r.code, code) << "fedpar " << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "fedpar " << args << "\n" << r.err;
  return r;
}

}  // namespace fedpar::testing
