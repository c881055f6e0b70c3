// How the model reaches the clients in each TASK: as float32 (sent without a copy), as a codec's
// encoding of the model (a 16-bit cast), or in delta mode as the encoded change since what the
// clients hold. In delta mode the server keeps the clients' replica x^: it sends C(x - x^) and
// both sides add D(C(x - x^)) to x^, so what the codec drops stays in x - x^ and goes out with the
// next round (error feedback on the server, with no residual of its own). Every process must
// receive every TASK then, or its replica falls behind; the first TASK carries the whole model.
#pragma once

#include <memory>
#include <vector>

#include "core/codec/codec.h"
#include "core/run_spec.h"
#include "protocol/messages.h"

namespace fedpar {

class Downlink {
 public:
  // `layout`: the model's tensors (PowerSGD factors each matrix; its warm start lives here).
  explicit Downlink(const CompressionSpec& c, const ParamLayout& layout = {});
  // `task` with the model `snapshot` attached as this downlink sends it, for envelope `e`.
  WireMessage encode(TaskMsg task, std::shared_ptr<const std::vector<float>> snapshot,
                     const Envelope& e);
  bool delta() const { return delta_; }  // every process needs every TASK

 private:
  std::unique_ptr<Codec> codec_;  // null: raw float32
  bool delta_;
  std::vector<float> replica_, change_, decoded_;
  std::vector<uint8_t> bytes_;
};

}  // namespace fedpar
