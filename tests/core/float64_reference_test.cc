// The float64 reference against the float32 core on the same full-batch steps: they agree to
// float32's rounding (a wrong sign, a missing ReLU mask or a transposed weight would put them
// orders of magnitude apart), and the reference is refused for models it does not cover.
#include "core/float64_reference.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/backend.h"
#include "core/synthetic.h"
#include "core/trainer.h"

namespace fedpar {
namespace {

double relative(const std::vector<double>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - double(b[i])) * (a[i] - double(b[i]));
    den += a[i] * a[i];
  }
  return std::sqrt(num / den);
}

TEST(Float64Reference, FollowsTheFloat32CoreUpToRounding) {
  const TrainTest data = generate_synthetic({.alpha = 1, .beta = 1, .devices = 5, .seed = 3});
  auto be = make_backend("cpu");
  for (const ModelSpec& spec : {ModelSpec{"logreg", {}}, ModelSpec{"mlp", {16, 8}}}) {
    SCOPED_TRACE(spec.name);
    Model m(*be, spec, data.train.shape, data.train.num_classes);
    m.init(7);
    const std::vector<float> init = m.params_host();
    TrainOptions o{.epochs = 20, .batch = 0, .seed = 7, .shuffle = false};
    o.lr.base_lr = 0.5f;
    train(m, data.train, {}, o);
    const std::vector<float> f32 = m.params_host();
    const auto f64 = float64_gradient_descent(spec, init, data.train, 20, 0.5f);
    ASSERT_TRUE(f64.has_value());
    ASSERT_EQ(f64->size(), f32.size());
    const double moved = relative(*f64, init);
    EXPECT_GT(moved, 1e-2) << "20 steps move the model";
    EXPECT_LT(relative(*f64, f32), 1e-5) << "float32's rounding, against a move of " << moved;
    // one step fewer is far: the comparison sees a step
    const auto f64_19 = float64_gradient_descent(spec, init, data.train, 19, 0.5f);
    EXPECT_GT(relative(*f64_19, f32), 1e-4);
  }
  EXPECT_FALSE(float64_gradient_descent({"cnn", {}}, {}, data.train, 1, 0.1f).has_value());
  EXPECT_FALSE(float64_gradient_descent({"linreg", {}}, {}, data.train, 1, 0.1f).has_value());
}

}  // namespace
}  // namespace fedpar
