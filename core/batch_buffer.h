// BatchBuffer: one batch of a dataset in a backend's memory. Rows are gathered straight into
// device buffers when the backend's memory is host memory (CPU), through a staging copy otherwise.
// Loading the same rows of the same dataset again is free (full-batch gradient descent loads its
// whole set every step): the dataset must not change while a buffer holds its rows.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/dataset.h"

namespace fedpar {

class BatchBuffer {
 public:
  BatchBuffer(Backend& be, size_t dim) : be_(be), dim_(dim) {}
  void load(const Dataset& d, std::span<const uint32_t> idx) {
    if (&d == loaded_from_ && std::ranges::equal(idx, loaded_)) return;
    loaded_from_ = nullptr;  // until the gather below completes
    const size_t n = idx.size();
    x_.reserve(be_, n * dim_);
    y_.reserve(be_, n);
    if (be_.host_memory()) {
      d.gather(idx, x_.data(), y_.data());
    } else {
      hx_.resize(n * dim_);
      hy_.resize(n);
      d.gather(idx, hx_.data(), hy_.data());
      x_.upload(hx_.data(), hx_.size());
      y_.upload(hy_.data(), hy_.size());
    }
    loaded_.assign(idx.begin(), idx.end());
    loaded_from_ = &d;
  }
  const float* x() const { return x_.data(); }
  const int32_t* y() const { return y_.data(); }
  const float* x_at(size_t row) const { return x_.data() + row * dim_; }
  const int32_t* y_at(size_t row) const { return y_.data() + row; }

 private:
  Backend& be_;
  size_t dim_;
  DeviceArray<float> x_;
  DeviceArray<int32_t> y_;
  std::vector<float> hx_;
  std::vector<int32_t> hy_;
  const Dataset* loaded_from_ = nullptr;  // what x_/y_ hold: these rows of this dataset
  std::vector<uint32_t> loaded_;
};

}  // namespace fedpar
