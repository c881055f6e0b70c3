// random-k on the ring; see ring_randk.h.
#include "transport/ring_randk.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/codec/randk.h"

namespace fedpar {

RingStats ring_allreduce_randk(std::span<float> data, int rank, int n, RingLink& link,
                               size_t bucket_floats, const CodecParams& params, uint64_t round,
                               std::span<float> own) {
  FEDPAR_CHECK(own.empty() || own.size() == data.size()) << "randk ring: own of " << own.size();
  const size_t k = randk_count(data.size(), params.ratio);
  const auto idx = randk_indices(params.seed, round, data.size(), k);
  const float scale = randk_scale(data.size(), k, params.randk_unbiased);
  std::vector<float> picked(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) picked[j] = data[idx[j]];
  if (!own.empty()) {
    std::fill(own.begin(), own.end(), 0.0f);
    for (size_t j = 0; j < idx.size(); ++j) own[idx[j]] = picked[j] * scale;
  }
  const RingStats st = ring_allreduce(picked, rank, n, link, bucket_floats);
  std::fill(data.begin(), data.end(), 0.0f);
  for (size_t j = 0; j < idx.size(); ++j) data[idx[j]] = picked[j] * scale;
  return st;
}

}  // namespace fedpar
