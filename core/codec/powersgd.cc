// PowerSGD; see powersgd.h.
#include "core/codec/powersgd.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {

std::vector<PowerSgdTensor> powersgd_plan(const std::vector<std::vector<int64_t>>& shapes,
                                          uint32_t rank) {
  std::vector<PowerSgdTensor> plan;
  size_t offset = 0;
  for (const auto& shape : shapes) {
    PowerSgdTensor t{.offset = offset, .rows = 1, .cols = 1};
    for (size_t i = 0; i < shape.size(); ++i) (i == 0 ? t.rows : t.cols) *= size_t(shape[i]);
    t.factored = shape.size() >= 2 && size_t(rank) * (t.rows + t.cols) < t.rows * t.cols;
    offset += t.size();
    plan.push_back(t);
  }
  return plan;
}

size_t powersgd_wire_floats(std::span<const PowerSgdTensor> plan, uint32_t rank) {
  size_t n = 0;
  for (const auto& t : plan) n += t.factored ? size_t(rank) * (t.rows + t.cols) : t.size();
  return n;
}

void powersgd_initial_q(uint64_t seed, uint32_t client, uint32_t tensor, std::span<float> q) {
  Rng rng(seed, "powersgd", client, tensor);
  for (float& x : q) x = float(rng.normal());
}

void powersgd_redraw_dead_columns(uint64_t seed, uint64_t round, uint32_t client, uint32_t tensor,
                                  size_t cols, uint32_t rank, std::span<float> q) {
  FEDPAR_CHECK(q.size() == cols * rank) << "powersgd: Q of " << q.size();
  for (uint32_t j = 0; j < rank; ++j) {
    bool zero = true, finite = true;
    for (size_t k = 0; k < cols; ++k) {
      zero &= q[k * rank + j] == 0.0f;
      finite &= std::isfinite(q[k * rank + j]);
    }
    if (!zero && finite) continue;
    Rng rng(splitmix64(seed ^ splitmix64(round)), "powersgd-redraw", client, tensor);
    for (uint32_t skip = 0; skip < j; ++skip)  // column j's draws follow the earlier columns'
      for (size_t k = 0; k < cols; ++k) (void)rng.normal();
    for (size_t k = 0; k < cols; ++k) q[k * rank + j] = float(rng.normal());
  }
}

void powersgd_mq(std::span<const float> m, size_t rows, size_t cols, std::span<const float> q,
                 uint32_t rank, std::span<float> p) {
  std::vector<double> acc(rank);
  for (size_t i = 0; i < rows; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float* row = m.data() + i * cols;
    for (size_t k = 0; k < cols; ++k)
      for (uint32_t j = 0; j < rank; ++j) acc[j] += double(row[k]) * double(q[k * rank + j]);
    for (uint32_t j = 0; j < rank; ++j) p[i * rank + j] = float(acc[j]);
  }
}

void powersgd_mtp(std::span<const float> m, size_t rows, size_t cols, std::span<const float> p,
                  uint32_t rank, std::span<float> q) {
  std::vector<double> acc(cols * rank, 0.0);  // row by row: M is read in its memory order
  for (size_t i = 0; i < rows; ++i) {
    const float* row = m.data() + i * cols;
    for (size_t k = 0; k < cols; ++k)
      for (uint32_t j = 0; j < rank; ++j)
        acc[k * rank + j] += double(row[k]) * double(p[i * rank + j]);
  }
  for (size_t i = 0; i < acc.size(); ++i) q[i] = float(acc[i]);
}

void powersgd_expand(std::span<const float> p, std::span<const float> q, size_t rows, size_t cols,
                     uint32_t rank, std::span<float> out) {
  for (size_t i = 0; i < rows; ++i)
    for (size_t k = 0; k < cols; ++k) {
      double s = 0;
      for (uint32_t j = 0; j < rank; ++j) s += double(p[i * rank + j]) * double(q[k * rank + j]);
      out[i * cols + k] = float(s);
    }
}

void powersgd_orthonormalise(std::span<float> p, size_t rows, uint32_t rank) {
  std::vector<double> a(p.begin(), p.end());
  for (uint32_t j = 0; j < rank; ++j) {
    for (uint32_t i = 0; i < j; ++i) {  // modified Gram-Schmidt: against the updated column
      double dot = 0;
      for (size_t r = 0; r < rows; ++r) dot += a[r * rank + i] * a[r * rank + j];
      for (size_t r = 0; r < rows; ++r) a[r * rank + j] -= dot * a[r * rank + i];
    }
    double norm2 = 0;
    for (size_t r = 0; r < rows; ++r) norm2 += a[r * rank + j] * a[r * rank + j];
    const double norm = std::sqrt(norm2);
    for (size_t r = 0; r < rows; ++r) a[r * rank + j] = norm == 0 ? 0.0 : a[r * rank + j] / norm;
  }
  for (size_t i = 0; i < a.size(); ++i) p[i] = float(a[i]);
}

namespace {

// The warm starts: per client, per tensor, the Q its last encoding sent. Guarded by a mutex, so
// concurrent encodes (of different clients) are safe.
class PowerSgd final : public Codec {
 public:
  explicit PowerSgd(const CodecParams& p)
      : rank_(p.rank),
        seed_(p.seed),
        plan_(powersgd_plan(p.shapes, p.rank)),
        total_(plan_.empty() ? 0 : plan_.back().offset + plan_.back().size()),
        wire_floats_(powersgd_wire_floats(plan_, p.rank)) {}
  CodecId id() const override { return CodecId::kPowerSgd; }

  void encode(std::span<const float> v, const CodecContext& ctx,
              std::vector<uint8_t>& out) const override {
    FEDPAR_CHECK(v.size() == total_)
        << "powersgd: a vector of " << v.size() << " values for tensors of " << total_;
    std::lock_guard<std::mutex> lock(mu_);
    auto& qs = warm_[ctx.client];
    qs.resize(plan_.size());
    out.resize(4 * wire_floats_);
    uint8_t* w = out.data();
    auto put = [&w](std::span<const float> f) {
      std::memcpy(w, f.data(), f.size_bytes());
      w += f.size_bytes();
    };
    for (size_t t = 0; t < plan_.size(); ++t) {
      const PowerSgdTensor& x = plan_[t];
      const auto m = v.subspan(x.offset, x.size());
      if (!x.factored) {
        put(m);
        continue;
      }
      std::vector<float>& q = qs[t];
      if (q.size() != x.cols * rank_) {
        q.resize(x.cols * rank_);
        powersgd_initial_q(seed_, ctx.client, uint32_t(t), q);
      }
      powersgd_redraw_dead_columns(seed_, ctx.round, ctx.client, uint32_t(t), x.cols, rank_, q);
      p_.resize(x.rows * rank_);
      powersgd_mq(m, x.rows, x.cols, q, rank_, p_);
      powersgd_orthonormalise(p_, x.rows, rank_);
      powersgd_mtp(m, x.rows, x.cols, p_, rank_, q);
      put(p_);
      put(q);
    }
  }

  std::string decode(std::span<const uint8_t> bytes, const CodecContext&,
                     std::span<float> out) const override {
    if (out.size() != total_)
      return fmt::format("powersgd: {} values asked of tensors holding {}", out.size(), total_);
    if (bytes.size() != 4 * wire_floats_)
      return fmt::format("powersgd holds {} bytes, expected {} (rank {})", bytes.size(),
                         4 * wire_floats_, rank_);
    const uint8_t* at = bytes.data();
    std::vector<float> p, q;
    auto take = [&at](std::span<float> into) {
      std::memcpy(into.data(), at, into.size_bytes());
      at += into.size_bytes();
    };
    for (const PowerSgdTensor& x : plan_) {
      const auto m = out.subspan(x.offset, x.size());
      if (!x.factored) {
        take(m);
        continue;
      }
      p.resize(x.rows * rank_);
      q.resize(x.cols * rank_);
      take(p);
      take(q);
      powersgd_expand(p, q, x.rows, x.cols, rank_, m);
    }
    return "";
  }

 private:
  uint32_t rank_;
  uint64_t seed_;
  std::vector<PowerSgdTensor> plan_;
  size_t total_, wire_floats_;
  mutable std::mutex mu_;
  mutable std::map<uint32_t, std::vector<std::vector<float>>> warm_;  // client -> Q per tensor
  mutable std::vector<float> p_;                                      // scratch, under mu_
};

}  // namespace

std::unique_ptr<Codec> make_powersgd_codec(const CodecParams& p) {
  check_codec_params("powersgd", p);
  if (p.shapes.empty())
    throw Error(
        "powersgd needs the shapes of the model's tensors (CodecParams::shapes, with_layout)");
  for (const auto& shape : p.shapes)
    for (int64_t d : shape)
      if (d < 1) throw Error(fmt::format("powersgd: a tensor dimension of {}", d));
  return std::make_unique<PowerSgd>(p);
}

}  // namespace fedpar
