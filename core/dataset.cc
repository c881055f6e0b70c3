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

size_t Dataset::num_users() const {
  std::vector<int32_t> u = user;
  std::sort(u.begin(), u.end());
  return size_t(std::unique(u.begin(), u.end()) - u.begin());
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

std::optional<std::string> mnist_folder(const DataOptions& o) {
  if (o.name != "mnist") return std::nullopt;
  return fs::absolute(resolve_data_dir(o.data_dir) / "mnist").lexically_normal().string();
}

namespace {

// One MNIST split's files, checked against each other: its labels (all digits) and its images,
// opened to be read in order.
struct MnistSplit {
  std::vector<int32_t> labels;
  IdxStream images;
};

MnistSplit open_mnist_split(const fs::path& dir, const std::string& prefix) {
  IdxStream images(dir / (prefix + "-images-idx3-ubyte"), 3);  // first: a missing set names it
  const IdxArray labels = read_idx_u8(dir / (prefix + "-labels-idx1-ubyte"), 1);
  MnistSplit split{{}, std::move(images)};
  const auto& dims = split.images.dims();
  if (dims[0] != labels.dims[0])
    throw Error(fmt::format("MNIST {}: {} images but {} labels", prefix, dims[0], labels.dims[0]));
  if (dims[1] != 28 || dims[2] != 28)
    throw Error(
        fmt::format("MNIST {}: images are {}x{}, expected 28x28", prefix, dims[1], dims[2]));
  split.labels.resize(labels.data.size());
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] > 9)
      throw Error(
          fmt::format("MNIST {}: label {} at index {} is not a digit", prefix, labels.data[i], i));
    split.labels[i] = labels.data[i];
  }
  return split;
}

Dataset mnist_header() {
  Dataset d;
  d.name = "mnist", d.shape = {28, 28, 1}, d.num_classes = 10;
  return d;
}

// Pixels as fedpar's MNIST features: bytes 0..255 to floats 0..1.
void to_unit(const uint8_t* bytes, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = float(bytes[i]) / 255.0f;
}

Dataset load_mnist_split(const fs::path& dir, const std::string& prefix) {
  MnistSplit split = open_mnist_split(dir, prefix);
  Dataset d = mnist_header();
  const size_t n = split.labels.size();
  std::vector<uint8_t> bytes(n * d.dim());
  split.images.read(n, bytes.data());
  d.x.resize(bytes.size());
  to_unit(bytes.data(), bytes.size(), d.x.data());
  d.y = std::move(split.labels);
  return d;
}

void check_rows(std::span<const uint32_t> rows, size_t n) {
  FEDPAR_CHECK(std::is_sorted(rows.begin(), rows.end()) &&
               std::adjacent_find(rows.begin(), rows.end()) == rows.end())
      << "rows must be ascending without repeats";
  if (!rows.empty() && rows.back() >= n)
    throw RowOutOfRange(
        fmt::format("sample {} was asked for, of a {}-sample training set", rows.back(), n));
}

// load_mnist_split("train"), truncated to `limit`, cut to `rows`, and hashed as content_hash()
// hashes the whole: images are read, converted and hashed 1024 at a time.
TrainingRows load_mnist_rows(const fs::path& dir, size_t limit, std::span<const uint32_t> rows) {
  MnistSplit split = open_mnist_split(dir, "train");
  const size_t n = limit == 0 ? split.labels.size() : std::min(limit, split.labels.size());
  check_rows(rows, n);
  TrainingRows out;
  out.full_size = n;
  Dataset& d = out.data;
  d = mnist_header();
  std::vector<int32_t> y(split.labels.begin(), split.labels.begin() + std::ptrdiff_t(n));
  const int64_t head[4] = {d.shape.h, d.shape.w, d.shape.c, d.num_classes};
  uint64_t h = hash_bytes(y.data(), n * sizeof(int32_t), hash_bytes(head, sizeof(head)));
  HashStream x_hash(hash_bytes(nullptr, 0, h));  // the empty list of user ids, as content_hash()
  const size_t dim = d.dim(), piece = 1024;
  d.x.resize(rows.size() * dim);
  std::vector<uint8_t> bytes(piece * dim);
  std::vector<float> x(piece * dim);
  size_t next = 0;  // the first row of `rows` not yet taken
  for (size_t start = 0; start < n; start += piece) {
    const size_t m = std::min(piece, n - start);
    split.images.read(m, bytes.data());
    to_unit(bytes.data(), m * dim, x.data());
    x_hash.add(x.data(), m * dim * sizeof(float));
    for (; next < rows.size() && rows[next] < start + m; ++next) {
      std::copy_n(x.data() + (rows[next] - start) * dim, dim, d.x.data() + next * dim);
      d.y.push_back(y[rows[next]]);
    }
  }
  out.content_hash = hash_hex(x_hash.finish());
  out.all_labels = std::move(y);
  return out;
}

}  // namespace

TrainingRows load_training_rows(const DataOptions& o, std::span<const uint32_t> rows) {
  if (o.name == "mnist")
    return load_mnist_rows(resolve_data_dir(o.data_dir) / "mnist", o.train_limit, rows);
  TrainingRows out;
  out.data = load_dataset(o).train;
  out.full_size = out.data.size();
  out.content_hash = out.data.content_hash();
  out.all_labels = out.data.y;
  check_rows(rows, out.full_size);
  out.data.keep_rows(rows);
  return out;
}

TrainTest load_without_training_features(const DataOptions& o, std::string& train_hash) {
  if (o.name != "mnist") {  // small sets: loaded whole, then the features dropped
    TrainTest tt = load_dataset(o);
    train_hash = tt.train.content_hash();
    tt.train.x = std::vector<float>();
    return tt;
  }
  const fs::path dir = resolve_data_dir(o.data_dir) / "mnist";
  TrainingRows rows = load_mnist_rows(dir, o.train_limit, {});
  train_hash = rows.content_hash;
  TrainTest tt{std::move(rows.data), load_mnist_split(dir, "t10k")};
  tt.train.y = std::move(rows.all_labels);
  tt.test.truncate(o.test_limit);
  return tt;
}

Dataset dataset_header(const DataOptions& o) {
  if (o.name == "mnist") return mnist_header();
  Dataset d = load_dataset(o).train;
  d.x = {}, d.y = {}, d.user = {};
  return d;
}

std::vector<std::string> limits_above_the_data(const DataOptions& o, const TrainTest& d) {
  std::vector<std::string> out;
  if (o.train_limit > d.train.size())
    out.push_back(
        fmt::format("data.train_limit = {} is more than the {} training samples: all are used",
                    o.train_limit, d.train.size()));
  if (o.test_limit > d.test.size())
    out.push_back(fmt::format("data.test_limit = {} is more than the {} test samples: all are used",
                              o.test_limit, d.test.size()));
  return out;
}

std::string describe(const TrainTest& d) {
  const std::string users =
      d.train.has_users() ? fmt::format("{} users", d.train.num_users()) : "no user column";
  // a label is a class index: labels 0, 1000, 2000 make 2001 outputs, 1998 of them never trained
  std::vector<bool> seen(size_t(std::max(0, d.train.num_classes)), false);
  for (int32_t y : d.train.y)
    if (y >= 0 && size_t(y) < seen.size()) seen[size_t(y)] = true;
  const auto unseen = size_t(std::count(seen.begin(), seen.end(), false));
  return fmt::format(
      "{}: {} training samples of {} features, {} classes{}, {}; {}", d.train.name, d.train.size(),
      d.train.dim(), d.train.num_classes,
      unseen ? fmt::format(" ({} without a training sample: a label is a class index, so gaps in "
                           "the labels widen the model)",
                           unseen)
             : "",
      users,
      d.test.size() ? fmt::format("{} test samples", d.test.size()) : std::string("no test set"));
}

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
        throw Error(fmt::format(
            "{} has {} features but {} has {} (is the last column of one a user id? a header "
            "line whose last column is `user`, or data.csv_user_column = true, says so)",
            o.csv_test.string(), tt.test.dim(), o.csv_train.string(), tt.train.dim()));
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
