// [model] and [data] config sections; see model_data_config.h.
#include "core/model_data_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"
#include "core/spelling.h"

namespace fedpar {

const char* const kModelDataDefaults = R"(
[model]
name = "2nn"            # logreg | linreg | mlp | 2nn | cnn | lenet
hidden = []             # mlp only: hidden widths, e.g. [200, 200]
init_from = ""          # start from saved parameters: a .safetensors, or a results folder
                        # holding model.safetensors; empty: a random init from the seed

[data]
name = "mnist"          # mnist | synthetic | csv
dir = ""                # folder holding mnist/; empty: $FEDPAR_DATA_DIR, ./data, source tree data/
train_limit = 0         # keep the first n training samples (0 = all)
test_limit = 0          # the first n test samples (MNIST's first ones score below the whole set's)
alpha = 0.0             # synthetic: model heterogeneity
beta = 0.0              # synthetic: feature heterogeneity
iid = false             # synthetic: the IID variant
devices = 30            # synthetic: number of devices (users)
csv_train = ""          # csv: features..., label[, user]
csv_test = ""
csv_user_column = false
)";

ModelSpec resolve_model_spec(const Config& c) {
  ModelSpec m;
  m.name = c.get_string("model.name");
  m.init_from = c.get_string("model.init_from");
  for (int64_t h : c.get_int_list("model.hidden")) {
    if (h <= 0 || h >= (1 << 24))
      throw Error(fmt::format("model.hidden: width {} is out of range", h));
    m.hidden.push_back(int(h));
  }
  const auto models = model_names();
  if (std::find(models.begin(), models.end(), m.name) == models.end())
    throw Error(fmt::format("{}: unknown model '{}'{} (valid models: {})", c.where("model.name"),
                            m.name, did_you_mean(m.name, models), fmt::join(models, ", ")));
  return m;
}

uint64_t resolve_seed(const Config& c) {
  const int64_t seed = c.get_int("seed");
  if (seed < 0) throw Error(fmt::format("seed must be >= 0, got {}", seed));
  return uint64_t(seed);
}

void check_csv_keys(const DataOptions& d) {
  if (d.name == "csv" || (d.csv_train.empty() && d.csv_test.empty() && !d.csv_user_column)) return;
  throw Error(fmt::format(
      "{} is read with data.name = \"csv\" only, and data.name is '{}': set data.name = "
      "\"csv\" (--dataset csv) to train on the file, or leave the csv keys out",
      !d.csv_train.empty()  ? "data.csv_train"
      : !d.csv_test.empty() ? "data.csv_test"
                            : "data.csv_user_column",
      d.name));
}

DataOptions resolve_data_options(const Config& c, uint64_t seed) {
  DataOptions d;
  d.name = c.get_string("data.name");
  const auto datasets = dataset_names();
  if (std::find(datasets.begin(), datasets.end(), d.name) == datasets.end())
    throw Error(fmt::format("{}: unknown dataset '{}'{} (valid datasets: {})", c.where("data.name"),
                            d.name, did_you_mean(d.name, datasets), fmt::join(datasets, ", ")));
  d.data_dir = c.get_string("data.dir");
  if (c.get_int("data.train_limit") < 0 || c.get_int("data.test_limit") < 0)
    throw Error("data.train_limit and data.test_limit must be >= 0");
  d.train_limit = size_t(c.get_int("data.train_limit"));
  d.test_limit = size_t(c.get_int("data.test_limit"));
  d.alpha = c.get_float("data.alpha");
  d.beta = c.get_float("data.beta");
  d.iid = c.get_bool("data.iid");
  d.devices = c.get_int32("data.devices");
  if (d.devices < 1) throw Error("data.devices must be >= 1");
  d.csv_train = c.get_string("data.csv_train");
  d.csv_test = c.get_string("data.csv_test");
  d.csv_user_column = c.get_bool("data.csv_user_column");
  check_csv_keys(d);
  d.seed = seed;
  return d;
}

}  // namespace fedpar
