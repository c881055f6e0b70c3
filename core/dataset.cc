// Dataset registry: MNIST from IDX files, Synthetic(alpha, beta), CSV.
#include "core/dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/csv_dataset.h"
#include "core/hash.h"
#include "core/idx.h"
#include "core/synthetic.h"

#ifndef FEDPAR_SOURCE_DIR
#define FEDPAR_SOURCE_DIR "."
#endif

namespace fedpar {

namespace fs = std::filesystem;

void Dataset::gather(std::span<const uint32_t> indices, float* x_out, int32_t* y_out) const {
  const size_t d = dim();
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint32_t r = indices[i];
    std::memcpy(x_out + i * d, x.data() + size_t(r) * d, d * sizeof(float));
    y_out[i] = y[r];
  }
}

void Dataset::truncate(size_t n) {
  if (n == 0 || n >= size()) return;
  x.resize(n * dim());
  y.resize(n);
  if (!user.empty()) user.resize(n);
  x.shrink_to_fit(), y.shrink_to_fit(), user.shrink_to_fit();
}

void Dataset::keep_rows(std::span<const uint32_t> rows) {
  FEDPAR_CHECK(std::is_sorted(rows.begin(), rows.end()) &&
               std::adjacent_find(rows.begin(), rows.end()) == rows.end() &&
               (rows.empty() || rows.back() < size()))
      << "keep_rows needs ascending rows of the " << size() << "-sample set";
  Dataset kept{name,
               shape,
               num_classes,
               std::vector<float>(rows.size() * dim()),
               std::vector<int32_t>(rows.size()),
               {}};
  gather(rows, kept.x.data(), kept.y.data());
  if (!user.empty())
    for (uint32_t r : rows) kept.user.push_back(user[r]);
  *this = std::move(kept);  // the old buffers go back to the system
}

std::string Dataset::content_hash() const {
  const int64_t head[4] = {shape.h, shape.w, shape.c, num_classes};
  uint64_t h = hash_bytes(head, sizeof(head));
  h = hash_bytes(y.data(), y.size() * sizeof(int32_t), h);
  h = hash_bytes(user.data(), user.size() * sizeof(int32_t), h);
  return hash_hex(hash_bytes(x.data(), x.size() * sizeof(float), h));
}

fs::path resolve_data_dir(const fs::path& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("FEDPAR_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  if (fs::is_directory("data/mnist", ec)) return "data";
  return fs::path(FEDPAR_SOURCE_DIR) / "data";
}

namespace {

Dataset load_mnist_split(const fs::path& dir, const std::string& prefix) {
  const IdxArray images = read_idx_u8(dir / (prefix + "-images-idx3-ubyte"), 3);
  const IdxArray labels = read_idx_u8(dir / (prefix + "-labels-idx1-ubyte"), 1);
  if (images.dims[0] != labels.dims[0])
    throw Error(
        fmt::format("MNIST {}: {} images but {} labels", prefix, images.dims[0], labels.dims[0]));
  if (images.dims[1] != 28 || images.dims[2] != 28)
    throw Error(fmt::format("MNIST {}: images are {}x{}, expected 28x28", prefix, images.dims[1],
                            images.dims[2]));
  Dataset d;
  d.name = "mnist";
  d.shape = {28, 28, 1};
  d.num_classes = 10;
  d.x.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i) d.x[i] = float(images.data[i]) / 255.0f;
  d.y.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] > 9)
      throw Error(
          fmt::format("MNIST {}: label {} at index {} is not a digit", prefix, labels.data[i], i));
    d.y[i] = labels.data[i];
  }
  return d;
}

}  // namespace

TrainTest load_dataset(const DataOptions& o) {
  TrainTest tt;
  if (o.name == "mnist") {
    const fs::path dir = resolve_data_dir(o.data_dir) / "mnist";
    tt.train = load_mnist_split(dir, "train");
    tt.test = load_mnist_split(dir, "t10k");
  } else if (o.name == "synthetic") {
    tt = generate_synthetic(
        {.alpha = o.alpha, .beta = o.beta, .iid = o.iid, .devices = o.devices, .seed = o.seed});
  } else if (o.name == "csv") {
    if (o.csv_train.empty()) throw Error("dataset 'csv' needs a training file: --csv-train PATH");
    tt.train = read_csv_dataset(o.csv_train, o.csv_user_column);
    if (!o.csv_test.empty()) {
      tt.test = read_csv_dataset(o.csv_test, o.csv_user_column);
      if (tt.test.dim() != tt.train.dim())
        throw Error(fmt::format("{} has {} features but {} has {}", o.csv_test.string(),
                                tt.test.dim(), o.csv_train.string(), tt.train.dim()));
      const int classes = std::max(tt.train.num_classes, tt.test.num_classes);
      tt.train.num_classes = tt.test.num_classes = classes;
    }
  } else {
    throw Error(fmt::format("unknown dataset '{}' (valid datasets: {})", o.name,
                            fmt::join(dataset_names(), ", ")));
  }
  tt.train.truncate(o.train_limit);
  tt.test.truncate(o.test_limit);
  return tt;
}

}  // namespace fedpar
