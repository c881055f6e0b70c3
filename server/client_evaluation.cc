// ClientScorer; see client_evaluation.h.
#include "server/client_evaluation.h"

#include <numeric>

#include "core/feature_noise.h"
#include "core/trainer.h"

namespace fedpar {
namespace {

std::vector<uint32_t> first_rows(size_t n) {
  std::vector<uint32_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0u);
  return rows;
}

}  // namespace

const std::vector<uint32_t>& ClientScorer::scored(const ClientShard& c) {
  return c.held_out.empty() ? c.indices : c.held_out;
}

ClientScorer::ClientScorer(const Dataset& train, const Manifest& m, const PartitionParams& p)
    : train_(train), m_(m), noisy_(m.clients.size()) {
  for (size_t k = 0; k < m.clients.size(); ++k) {
    const ClientShard& c = m.clients[k];
    const double noise = feature_noise_level(p, c.id, size_t(p.clients));
    if (noise == 0.0) continue;
    // its rows in shard order (ascending), so the noise stream meets them as in its process's copy
    const std::vector<uint32_t>& rows = scored(c);
    Dataset& own = noisy_[k].emplace(
        Dataset{.name = train.name, .shape = train.shape, .num_classes = train.num_classes});
    own.x.resize(rows.size() * train.dim());
    own.y.resize(rows.size());
    train.gather(rows, own.x.data(), own.y.data());
    add_feature_noise(own.x, own.dim(), c.id, noise, first_rows(rows.size()), p.seed,
                      c.held_out.empty() ? NoisePart::kTraining : NoisePart::kHeldOut);
  }
}

std::vector<BatchStats> ClientScorer::score(Model& model) const {
  std::vector<BatchStats> out;
  out.reserve(m_.clients.size());
  for (size_t k = 0; k < m_.clients.size(); ++k)
    out.push_back(noisy_[k] ? evaluate(model, *noisy_[k])
                            : evaluate(model, train_, scored(m_.clients[k])));
  return out;
}

}  // namespace fedpar
