// ParamLayout: named views into ONE contiguous float32 parameter vector. Gradients, momentum,
// checkpoints, aggregation and the wire all use the same flat layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fedpar {

struct ParamView {
  std::string name;            // "fc1.weight"
  std::vector<int64_t> shape;  // PyTorch convention: (out, in) for weights
  size_t offset = 0;           // into the flat vector, in floats
  size_t size = 0;             // product of shape
};

class ParamLayout {
 public:
  // Appends a tensor; returns its offset. Names must be unique.
  size_t add(std::string name, std::vector<int64_t> shape);
  const std::vector<ParamView>& views() const { return views_; }
  const ParamView& find(const std::string& name) const;  // throws Error when absent
  size_t total() const { return total_; }

 private:
  std::vector<ParamView> views_;
  size_t total_ = 0;
};

}  // namespace fedpar
