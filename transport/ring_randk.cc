// random-k on the ring; see ring_randk.h.
#include "transport/ring_randk.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/codec/randk.h"

namespace fedpar {

RingStats ring_allreduce_randk(std::span<float> data, int rank, int n, RingLink& link,
                               size_t bucket_floats, uint64_t seed, uint64_t round, double ratio,
                               std::span<float> own) {
  FEDPAR_CHECK(own.empty() || own.size() == data.size()) << "randk ring: own of " << own.size();
  const auto idx = randk_indices(seed, round, data.size(), randk_count(data.size(), ratio));
  std::vector<float> picked(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) picked[j] = data[idx[j]];
  if (!own.empty()) {
    std::fill(own.begin(), own.end(), 0.0f);
    for (size_t j = 0; j < idx.size(); ++j) own[idx[j]] = picked[j];
  }
  const RingStats st = ring_allreduce(picked, rank, n, link, bucket_floats);
  std::fill(data.begin(), data.end(), 0.0f);
  for (size_t j = 0; j < idx.size(); ++j) data[idx[j]] = picked[j];
  return st;
}

}  // namespace fedpar
