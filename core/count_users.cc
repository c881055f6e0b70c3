// resolve_run_spec_counting_users; see count_users.h.
#include "core/count_users.h"

#include <cstdint>
#include <string>

#include "core/dataset.h"
#include "core/model_data_config.h"

namespace fedpar {

RunSpec resolve_run_spec_counting_users(Config& c) {
  if (c.get_string("partition.scheme") == "natural" && c.get_int("partition.clients") == 0) {
    std::string hash;
    const TrainTest d =
        load_without_training_features(resolve_data_options(c, resolve_seed(c)), hash);
    if (d.train.has_users())  // none: the partitioner refuses the data with its reason
      c.set("partition.clients", std::to_string(d.train.num_users()));
  }
  return resolve_run_spec(c);
}

}  // namespace fedpar
