// Finite-difference checks of every layer, both losses and whole models. Layers are checked
// through f = sum(y * r) for a random r (so dy = r): exact for parameter-linear maps up to float
// rounding, which keeps the tolerances tight.
#include <gtest/gtest.h>

#include <cmath>

#include "core/backend.h"
#include "core/layers.h"
#include "core/model.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

using testing::random_vector;

struct LayerCase {
  const char* name;
  std::function<std::unique_ptr<Layer>()> make;
  Shape in;
  friend void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }
};

double probe(Backend& be, Layer& l, const std::vector<float>& p, const std::vector<float>& x,
             const std::vector<float>& r, int batch) {
  std::vector<float> y(r.size());
  l.forward(be, p.data(), x.data(), y.data(), batch);
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += double(y[i]) * r[i];
  return s;
}

class LayerGradients : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayerGradients, MatchFiniteDifferences) {
  auto be = make_backend("cpu");
  const LayerCase& c = GetParam();
  auto layer = c.make();
  ParamLayout layout;
  layer->declare(layout, "l");
  const int batch = 3;
  std::vector<float> p(layout.total());
  layer->init(p, 11, 0);
  for (float& v : p) v *= 3.0f;  // bigger than init so biases matter
  auto x = random_vector(batch * c.in.size(), 12);
  auto r = random_vector(batch * layer->output_shape().size(), 13);
  std::vector<float> y(r.size()), g(p.size(), 0.0f), dx(x.size());
  layer->forward(*be, p.data(), x.data(), y.data(), batch);
  layer->backward(*be, p.data(), g.data(), x.data(), y.data(), r.data(), dx.data(), batch);

  const float eps = 1e-3f;
  auto numeric = [&](std::vector<float>& v, size_t i) {
    const float keep = v[i];
    v[i] = keep + eps;
    const double up = probe(*be, *layer, p, x, r, batch);
    v[i] = keep - eps;
    const double down = probe(*be, *layer, p, x, r, batch);
    v[i] = keep;
    return (up - down) / (2.0 * eps);
  };
  for (size_t i = 0; i < p.size(); i += std::max<size_t>(1, p.size() / 60))
    EXPECT_NEAR(g[i], numeric(p, i), 2e-3 + 2e-3 * std::abs(g[i])) << c.name << " param " << i;
  for (size_t i = 0; i < x.size(); i += std::max<size_t>(1, x.size() / 60))
    EXPECT_NEAR(dx[i], numeric(x, i), 2e-3 + 2e-3 * std::abs(dx[i])) << c.name << " input " << i;
}

INSTANTIATE_TEST_SUITE_P(AllLayers, LayerGradients,
                         ::testing::Values(LayerCase{"dense",
                                                     [] {
                                                       return make_dense({1, 1, 7}, 5);
                                                     },
                                                     {1, 1, 7}},
                                           LayerCase{"relu",
                                                     [] {
                                                       return make_relu({1, 1, 11});
                                                     },
                                                     {1, 1, 11}},
                                           LayerCase{"conv3x3",
                                                     [] {
                                                       return make_conv2d({4, 6, 2}, 3, 3);
                                                     },
                                                     {4, 6, 2}},
                                           LayerCase{"conv5x5",
                                                     [] {
                                                       return make_conv2d({6, 6, 1}, 2, 5);
                                                     },
                                                     {6, 6, 1}},
                                           LayerCase{"conv5x5valid",
                                                     [] {
                                                       return make_conv2d({7, 6, 2}, 3, 5, true);
                                                     },
                                                     {7, 6, 2}},
                                           LayerCase{"maxpool",
                                                     [] {
                                                       return make_maxpool2({4, 6, 3});
                                                     },
                                                     {4, 6, 3}}),
                         [](const auto& info) { return std::string(info.param.name); });

// Whole models: d(mean loss)/d(params) from forward_backward vs central differences of evaluate.
void check_model(const ModelSpec& spec, Shape in, int classes, int batch, size_t probes, double tol,
                 float eps = 1e-3f) {
  auto be = make_backend("cpu");
  Model m(*be, spec, in, classes);
  m.init(5);
  auto x = random_vector(batch * in.size(), 6, 0.0f, 1.0f);
  std::vector<int32_t> y(batch);
  for (int i = 0; i < batch; ++i) y[i] = (i * 7 + 3) % classes;
  m.zero_grads();
  m.forward_backward(x.data(), y.data(), batch, 1.0f / float(batch));
  const auto g = m.grads_host();
  auto p = m.params_host();
  auto loss_at = [&](std::vector<float>& params) {
    m.set_params_host(params);
    return m.evaluate(x.data(), y.data(), batch).loss_sum / batch;
  };
  auto central = [&](size_t i, float h) {
    const float keep = p[i];
    p[i] = keep + h;
    const double up = loss_at(p);
    p[i] = keep - h;
    const double down = loss_at(p);
    p[i] = keep;
    return (up - down) / (2.0 * h);
  };
  // ReLU and max-pool are piecewise linear: a probe that straddles a kink is not a derivative.
  // Such probes show up as disagreement between two step sizes and are skipped (and counted).
  size_t checked = 0, kinks = 0;
  for (const auto& view : m.layout().views()) {
    for (size_t j = 0; j < view.size; j += std::max<size_t>(1, view.size / probes)) {
      const size_t i = view.offset + j;
      const double n1 = central(i, eps), n2 = central(i, eps / 2);
      if (std::abs(n1 - n2) > tol + 1e-2 * std::abs(n1)) {
        ++kinks;
        continue;
      }
      ++checked;
      EXPECT_NEAR(g[i], n1, tol + 1e-2 * std::abs(g[i]))
          << spec.name << " " << view.name << "[" << j << "]";
    }
  }
  EXPECT_LE(kinks, checked / 5) << "too many non-smooth probes to trust the check";
}

TEST(ModelGradients, LogisticRegression) { check_model({"logreg"}, {1, 1, 9}, 4, 5, 40, 1e-4); }
TEST(ModelGradients, LinearRegressionSquaredLoss) {
  check_model({"linreg"}, {1, 1, 9}, 3, 5, 40, 1e-4);
}
TEST(ModelGradients, Mlp) { check_model({"mlp", {8, 6}}, {1, 1, 10}, 4, 4, 40, 2e-4); }
// A bias feeds 196 ReLUs per sample: kinks sit close together, so the steps must be small.
TEST(ModelGradients, FedAvgCnn) { check_model({"cnn"}, {28, 28, 1}, 10, 2, 12, 5e-4, 1e-4f); }
// Its 'valid' convolutions feed few, narrow ReLU maps into max-pooling: at h = 1e-4 a probe of a
// conv2 bias still straddled a kink on both step sizes; 3e-5 stays clear of them.
TEST(ModelGradients, LeNetWithValidConvolutions) {
  check_model({"lenet"}, {28, 28, 1}, 10, 4, 12, 5e-4, 3e-5f);
}

}  // namespace
}  // namespace fedpar
