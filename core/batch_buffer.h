// BatchBuffer: one batch of a dataset in a backend's memory. Rows are gathered straight into
// device buffers when the backend's memory is host memory (CPU), through a staging copy otherwise.
// Loading the same rows of the same dataset again is free (full-batch gradient descent loads its
// whole set every step), and on host memory a run of consecutive rows is used in place, not
// copied: the dataset must not change while a buffer holds its rows.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/dataset.h"

namespace fedpar {

// Rows idx of `d` into the host-memory backend's buffers x and y, the rows over its threads.
inline void gather_on_host(Backend& be, const Dataset& d, std::span<const uint32_t> idx, float* x,
                           int32_t* y) {
  be.gather_rows(x, d.x.data(), idx, d.dim());
  for (size_t i = 0; i < idx.size(); ++i) y[i] = d.y[idx[i]];
}

class BatchBuffer {
 public:
  BatchBuffer(Backend& be, size_t dim) : be_(be), dim_(dim) {}
  void load(const Dataset& d, std::span<const uint32_t> idx) {
    if (&d == loaded_from_ && std::ranges::equal(idx, loaded_)) return;
    loaded_from_ = nullptr;  // until the rows are in place
    const size_t n = idx.size();
    bool consecutive = be_.host_memory() && n > 0 && size_t(idx[0]) + n <= d.size();
    for (size_t i = 1; consecutive && i < n; ++i) consecutive = idx[i] == idx[0] + i;
    if (consecutive) {
      xp_ = d.x.data() + size_t(idx[0]) * dim_;
      yp_ = d.y.data() + idx[0];
      loaded_.assign(idx.begin(), idx.end());
      loaded_from_ = &d;
      return;
    }
    x_.reserve(be_, n * dim_);
    y_.reserve(be_, n);
    if (be_.host_memory()) {
      gather_on_host(be_, d, idx, x_.data(), y_.data());
    } else {
      hx_.resize(n * dim_);
      hy_.resize(n);
      d.gather(idx, hx_.data(), hy_.data());
      x_.upload(hx_.data(), hx_.size());
      y_.upload(hy_.data(), hy_.size());
    }
    xp_ = x_.data();
    yp_ = y_.data();
    loaded_.assign(idx.begin(), idx.end());
    loaded_from_ = &d;
  }
  const float* x() const { return xp_; }
  const int32_t* y() const { return yp_; }
  const float* x_at(size_t row) const { return xp_ + row * dim_; }
  const int32_t* y_at(size_t row) const { return yp_ + row; }

 private:
  Backend& be_;
  size_t dim_;
  DeviceArray<float> x_;
  DeviceArray<int32_t> y_;
  std::vector<float> hx_;
  std::vector<int32_t> hy_;
  const float* xp_ = nullptr;  // the rows: x_ / y_, or the dataset's own memory
  const int32_t* yp_ = nullptr;
  const Dataset* loaded_from_ = nullptr;  // what x_/y_ hold: these rows of this dataset
  std::vector<uint32_t> loaded_;
};

}  // namespace fedpar
