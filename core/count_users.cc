// resolve_run_spec_counting_users; see count_users.h.
#include "core/count_users.h"

#include <cstdint>
#include <set>
#include <string>

#include "core/dataset.h"
#include "core/model_data_config.h"

namespace fedpar {

RunSpec resolve_run_spec_counting_users(Config& c) {
  if (c.get_string("partition.scheme") == "natural" && c.get_int("partition.clients") == 0) {
    std::string hash;
    const TrainTest d =
        load_without_training_features(resolve_data_options(c, uint64_t(c.get_int("seed"))), hash);
    const std::set<int32_t> users(d.train.user.begin(), d.train.user.end());
    if (!users.empty())  // none: the partitioner refuses the data with its reason
      c.set("partition.clients", std::to_string(users.size()));
  }
  return resolve_run_spec(c);
}

}  // namespace fedpar
