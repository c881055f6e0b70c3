// float64_gradient_descent; see float64_reference.h. Eigen in double, in row chunks so the
// activations stay small whatever the dataset.
#include "core/float64_reference.h"

// GCC 12 warns inside Eigen 3.4's AVX-512 packing of double matrices (a false positive there).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/stop_signal.h"

namespace fedpar {
namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

struct DenseLayer {
  Matrix w;  // (out, in)
  Vector b;  // (out)
};

// The hidden widths of the dense ReLU presets; nullopt for every other model.
std::optional<std::vector<int>> dense_widths(const ModelSpec& spec) {
  if (spec.name == "logreg") return std::vector<int>{};
  if (spec.name == "2nn") return std::vector<int>{200, 200};
  if (spec.name == "mlp") return spec.hidden;
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<double>> float64_gradient_descent(const ModelSpec& spec,
                                                            std::span<const float> init,
                                                            const Dataset& train, int64_t rounds,
                                                            float lr) {
  const auto hidden = dense_widths(spec);
  if (!hidden) return std::nullopt;
  const int d = int(train.dim()), classes = train.num_classes;
  const size_t n = train.size();
  FEDPAR_CHECK(n > 0 && train.x.size() == n * size_t(d)) << "a training set with features";
  std::vector<int> widths = {d};
  widths.insert(widths.end(), hidden->begin(), hidden->end());
  widths.push_back(classes);

  std::vector<DenseLayer> layers;
  size_t at = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int in = widths[l], out = widths[l + 1];
    FEDPAR_CHECK(at + size_t(out) * size_t(in + 1) <= init.size()) << "init of the wrong size";
    DenseLayer layer{Matrix(out, in), Vector(out)};
    for (int i = 0; i < out * in; ++i) layer.w.data()[i] = init[at + size_t(i)];
    at += size_t(out) * size_t(in);
    for (int i = 0; i < out; ++i) layer.b[i] = init[at + size_t(i)];
    at += size_t(out);
    layers.push_back(std::move(layer));
  }
  FEDPAR_CHECK(at == init.size()) << "init has " << init.size() << " values, the model " << at;

  const double rate = double(lr);
  const size_t chunk = 2048;
  const size_t L = layers.size();
  std::vector<Matrix> act(L + 1), grad_w(L);
  std::vector<Vector> grad_b(L);
  for (int64_t r = 0; r < rounds; ++r) {
    throw_if_stopped();
    for (size_t l = 0; l < L; ++l) {
      grad_w[l] = Matrix::Zero(layers[l].w.rows(), layers[l].w.cols());
      grad_b[l] = Vector::Zero(layers[l].b.size());
    }
    for (size_t r0 = 0; r0 < n; r0 += chunk) {
      const Eigen::Index rows = Eigen::Index(std::min(chunk, n - r0));
      act[0] =
          Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
              train.x.data() + r0 * size_t(d), rows, d)
              .cast<double>();
      for (size_t l = 0; l < L; ++l) {
        act[l + 1] = (act[l] * layers[l].w.transpose()).rowwise() + layers[l].b.transpose();
        if (l + 1 < L) act[l + 1] = act[l + 1].cwiseMax(0.0);
      }
      // d(mean loss)/d(logits) = (softmax - one-hot) / n
      Matrix delta = act[L];
      for (Eigen::Index i = 0; i < rows; ++i) {
        const double top = delta.row(i).maxCoeff();
        delta.row(i) = (delta.row(i).array() - top).exp();
        delta.row(i) /= delta.row(i).sum();
        delta(i, train.y[r0 + size_t(i)]) -= 1.0;
      }
      delta /= double(n);
      for (size_t l = L; l-- > 0;) {
        grad_w[l] += delta.transpose() * act[l];
        grad_b[l] += delta.colwise().sum().transpose();
        if (l == 0) break;
        delta = (delta * layers[l].w).cwiseProduct((act[l].array() > 0.0).cast<double>().matrix());
      }
    }
    for (size_t l = 0; l < L; ++l) {
      layers[l].w -= rate * grad_w[l];
      layers[l].b -= rate * grad_b[l];
    }
  }
  std::vector<double> out;
  out.reserve(init.size());
  for (const auto& layer : layers) {
    out.insert(out.end(), layer.w.data(), layer.w.data() + layer.w.size());
    out.insert(out.end(), layer.b.data(), layer.b.data() + layer.b.size());
  }
  return out;
}

}  // namespace fedpar
