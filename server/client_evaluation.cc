// evaluate_clients; see client_evaluation.h.
#include "server/client_evaluation.h"

#include <numeric>

#include "core/feature_noise.h"
#include "core/trainer.h"

namespace fedpar {

std::vector<BatchStats> evaluate_clients(Model& model, const Dataset& train, const Manifest& m,
                                         const PartitionParams& p) {
  std::vector<BatchStats> out;
  out.reserve(m.clients.size());
  for (const ClientShard& c : m.clients) {
    const double noise = feature_noise_level(p, c.id, size_t(p.clients));
    if (noise == 0.0) {
      out.push_back(evaluate(model, train, c.indices));
      continue;
    }
    // its rows copied, in shard order, so the noise stream meets them as in the client's copy
    Dataset own{.name = train.name, .shape = train.shape, .num_classes = train.num_classes};
    own.x.resize(c.indices.size() * train.dim());
    own.y.resize(c.indices.size());
    train.gather(c.indices, own.x.data(), own.y.data());
    std::vector<uint32_t> rows(c.indices.size());
    std::iota(rows.begin(), rows.end(), 0u);
    add_feature_noise(own.x, own.dim(), c.id, noise, rows, p.seed);
    out.push_back(evaluate(model, own, rows));
  }
  return out;
}

}  // namespace fedpar
