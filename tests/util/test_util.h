// Helpers shared by the tests: random vectors that are never all zero, closeness checks with an
// absolute + relative tolerance, and a temporary folder removed at the end of the test.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dataset.h"
#include "core/rng.h"

namespace fedpar::testing {

inline std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  Rng rng(seed, "test");
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

// p -= lr * g on the host: the same float arithmetic as the core's plain SGD step, for checking a
// split model (stages, tensor shards) against the whole model step by step.
inline void host_sgd(std::vector<float>& p, const std::vector<float>& g, float lr) {
  for (size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
}

// Element-wise |a - b| <= atol + rtol * |b|; reports the first few failures.
inline ::testing::AssertionResult all_close(const std::vector<float>& a,
                                            const std::vector<float>& b, double atol, double rtol) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  int bad = 0;
  std::string msg;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(double(a[i]) - double(b[i]));
    if (!(d <= atol + rtol * std::abs(double(b[i])))) {
      if (bad++ < 5)
        msg += "\n  [" + std::to_string(i) + "] " + std::to_string(a[i]) + " vs " +
               std::to_string(b[i]);
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << a.size() << " differ:" << msg;
  return ::testing::AssertionSuccess();
}

// MNIST as scripts/setup.sh fetches it; tests that need it skip (naming the fix) without it.
inline bool have_mnist() {
  return std::filesystem::exists(fedpar::resolve_data_dir({}) / "mnist" /
                                 "train-images-idx3-ubyte") &&
         std::filesystem::exists(fedpar::resolve_data_dir({}) / "mnist" /
                                 "train-labels-idx1-ubyte");
}

// The message of the fedpar Error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("fedpar-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A tiny tmpfs mounted at `dir` (root only): a disk that fills up after `size` ("16k"). ok()
// is false where it cannot be mounted (not root, no mount); the destructor unmounts it.
class FullDisk {
 public:
  FullDisk(const std::filesystem::path& dir, const std::string& size) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    ok_ = ::geteuid() == 0 &&
          std::system(("mount -t tmpfs -o size=" + size + " tmpfs " + dir_.string()).c_str()) == 0;
  }
  ~FullDisk() {
    if (ok_ && std::system(("umount " + dir_.string()).c_str()) != 0) {
      // still mounted: the TempDir's removal then fails quietly; nothing else depends on it
    }
  }
  bool ok() const { return ok_; }

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
};

}  // namespace fedpar::testing
