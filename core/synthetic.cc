// Synthetic(alpha, beta) generator. For device k:
//   n_k = floor(lognormal(4, 2)) + 50 samples
//   u_k ~ N(0, alpha^2), B_k ~ N(0, beta^2)
//   W_k (60x10) ~ N(u_k, 1), b_k ~ N(u_k, 1)          (iid: one W, b ~ N(0, 1) for all)
//   v_k ~ N(B_k, 1) per coordinate                     (iid: v_k = B_k * 1)
//   x ~ N(v_k, diag(j^-1.2)), y = argmax(softmax(x W_k + b_k)) = argmax(x W_k + b_k)
#include "core/synthetic.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {

TrainTest generate_synthetic(const SyntheticOptions& o) {
  if (o.devices < 1) throw Error("synthetic: devices must be >= 1");
  if (!(o.alpha >= 0.0) || !(o.beta >= 0.0))
    throw Error(
        fmt::format("synthetic: alpha and beta must be >= 0 (got {}, {})", o.alpha, o.beta));
  const std::string name =
      o.iid ? "synthetic-iid" : fmt::format("synthetic({:g},{:g})", o.alpha, o.beta);
  TrainTest out;
  for (Dataset* d : {&out.train, &out.test}) {
    d->name = name;
    d->shape = {1, 1, o.dim};
    d->num_classes = o.classes;
  }
  Rng global(o.seed, "synthetic");
  std::vector<double> sigma(o.dim);
  for (int j = 0; j < o.dim; ++j) sigma[j] = std::sqrt(std::pow(double(j + 1), -1.2));
  auto draw_model = [&](Rng& r, double mean, std::vector<double>& w, std::vector<double>& b) {
    w.resize(size_t(o.dim) * o.classes);
    b.resize(o.classes);
    for (double& v : w) v = mean + r.normal();
    for (double& v : b) v = mean + r.normal();
  };
  std::vector<double> shared_w, shared_b;
  if (o.iid) draw_model(global, 0.0, shared_w, shared_b);

  std::vector<double> w, b, v(o.dim), x(o.dim), z(o.classes);
  for (int k = 0; k < o.devices; ++k) {
    Rng r(o.seed, "synthetic", uint32_t(k) + 1);
    const size_t n = size_t(std::floor(std::exp(4.0 + 2.0 * r.normal()))) + 50;
    const double u_k = o.alpha * r.normal();
    const double b_k = o.beta * r.normal();
    if (o.iid) {
      w = shared_w;
      b = shared_b;
      std::fill(v.begin(), v.end(), b_k);
    } else {
      draw_model(r, u_k, w, b);
      for (double& vj : v) vj = b_k + r.normal();
    }
    const size_t n_train = size_t(o.train_fraction * double(n));
    for (size_t i = 0; i < n; ++i) {
      for (int j = 0; j < o.dim; ++j) x[j] = v[j] + sigma[j] * r.normal();
      int best = 0;
      for (int c = 0; c < o.classes; ++c) {
        z[c] = b[c];
        for (int j = 0; j < o.dim; ++j) z[c] += x[j] * w[size_t(j) * o.classes + c];
        if (z[c] > z[best]) best = c;
      }
      Dataset& d = i < n_train ? out.train : out.test;
      for (int j = 0; j < o.dim; ++j) d.x.push_back(float(x[j]));
      d.y.push_back(best);
      d.user.push_back(k);
    }
  }
  return out;
}

}  // namespace fedpar
