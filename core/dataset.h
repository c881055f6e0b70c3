// In-memory datasets: features as float32 rows (NHWC per sample), integer labels, and optional
// per-sample user ids (the natural federated split). Loaded by name from disk or generated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/layers.h"

namespace fedpar {

struct Dataset {
  std::string name;
  Shape shape;  // per sample
  int num_classes = 0;
  std::vector<float> x;       // size() * dim() floats (none in a server's training set)
  std::vector<int32_t> y;     // labels in [0, num_classes)
  std::vector<int32_t> user;  // per-sample user id; empty when the data has none

  size_t size() const { return y.size(); }
  size_t dim() const { return shape.size(); }
  bool has_users() const { return !user.empty(); }
  size_t num_users() const;  // distinct user ids (0 without a user column)
  // Copies rows `indices` (in that order) into `x_out` and `y_out`.
  void gather(std::span<const uint32_t> indices, float* x_out, int32_t* y_out) const;
  // Keeps only the first n samples (n >= size() keeps all), and frees the rest.
  void truncate(size_t n);
  // Keeps only rows `rows` (ascending, no repeats), renumbered 0.. in that order, and frees the
  // rest: a client process holds the samples of the clients it hosts, not the whole set.
  void keep_rows(std::span<const uint32_t> rows);
  // 16 hex digits over shape, labels, users and features: names the exact data a manifest is for.
  std::string content_hash() const;
};

struct TrainTest {
  Dataset train, test;
};

struct DataOptions {
  std::string name = "mnist";      // mnist | synthetic | csv
  std::filesystem::path data_dir;  // mnist: folder holding mnist/*-ubyte; empty = search
  // synthetic: FedProx Synthetic(alpha, beta), or its IID variant
  double alpha = 0.0, beta = 0.0;
  bool iid = false;
  int devices = 30;
  uint64_t seed = 1;
  // csv: features..., label[, user]
  std::filesystem::path csv_train, csv_test;
  bool csv_user_column = false;
  // subsets: keep the first n samples (0 = all)
  size_t train_limit = 0, test_limit = 0;
};

// inline: resolving a config needs the names, not the loaders
inline std::vector<std::string> dataset_names() { return {"mnist", "synthetic", "csv"}; }
// Loads or generates the train and test sets; throws Error with a message that says what to do.
TrainTest load_dataset(const DataOptions& opts);
// The set's name, per-sample shape and classes, without its rows: MNIST's are known without
// reading it (a report that needs only the shape must not load 60,000 images per run); the
// others are loaded, then emptied.
Dataset dataset_header(const DataOptions& opts);
// A limit above its set's size keeps the whole set: what it said for each limit that did
// ("data.train_limit = 100000 is more than the 60000 training samples: all are used").
std::vector<std::string> limits_above_the_data(const DataOptions& opts, const TrainTest& loaded);
// One line on what was loaded, for a run's log: samples, features, classes, users, the test set
// (a CSV's columns read other than meant show here: a user id taken for the label has its count
// of classes, and "no user column").
std::string describe(const TrainTest& d);
// The training rows `rows` (ascending, no repeats) of the set `opts` names, renumbered 0.. in
// that order, with the whole set's size and content_hash(): what a client process holds. MNIST is
// read in pieces, so the whole set is never in memory; the others are loaded, then cut. Throws
// RowOutOfRange naming a row past the end.
// load_training_rows's refusal of a row past the end of the set: the asker's fault, not the data's.
class RowOutOfRange : public Error {
 public:
  using Error::Error;
};
struct TrainingRows {
  Dataset data;
  size_t full_size = 0;
  std::string content_hash;
  std::vector<int32_t> all_labels;  // of the whole set (what a server keeps)
};
TrainingRows load_training_rows(const DataOptions& opts, std::span<const uint32_t> rows);
// The test set whole and the training set without its features (labels, users, shape and
// classes kept; x empty), and in `train_hash` the training set's content_hash(): what a server
// needs, which partitions and evaluates but never trains.
TrainTest load_without_training_features(const DataOptions& opts, std::string& train_hash);
// Where MNIST is looked for when data_dir is empty: $FEDPAR_DATA_DIR, ./data, then the source
// tree's data/ folder (where scripts/setup.sh puts it).
std::filesystem::path resolve_data_dir(const std::filesystem::path& given);
// mnist: the absolute folder of its files as `o` finds them ("../data" resolved, symbolic links
// kept); nullopt for another dataset.
std::optional<std::string> mnist_folder(const DataOptions& o);

}  // namespace fedpar
