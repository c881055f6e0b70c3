// Downlink; see downlink.h.
#include "server/downlink.h"

#include "core/check.h"

namespace fedpar {

Downlink::Downlink(const CompressionSpec& c, const ParamLayout& layout)
    : codec_(make_codec(c.downlink, with_layout(c.params, layout))), delta_(c.downlink_delta) {
  FEDPAR_CHECK(!delta_ || codec_) << "a delta downlink needs a codec";
}

WireMessage Downlink::encode(TaskMsg task, std::shared_ptr<const std::vector<float>> snapshot,
                             const Envelope& e) {
  const std::span<const float> model(*snapshot);
  const CodecContext ctx{e.round, CodecContext::kDownlink};
  if (!codec_ || (delta_ && replica_.empty())) {  // raw; a delta downlink starts from the model
    if (delta_) replica_.assign(model.begin(), model.end());
    task.vectors = {model};
    return fedpar::encode(std::move(task), e, std::move(snapshot));
  }
  if (!delta_) {
    task.encoded = encode_vectors(*codec_, std::span(&model, 1), ctx);
    return fedpar::encode(std::move(task), e);
  }
  FEDPAR_CHECK(replica_.size() == model.size()) << "the model changed size";
  change_.resize(model.size());
  for (size_t i = 0; i < model.size(); ++i) change_[i] = model[i] - replica_[i];
  decoded_.resize(model.size());
  round_trip(*codec_, change_, ctx, bytes_, decoded_);
  for (size_t i = 0; i < model.size(); ++i) replica_[i] = replica_[i] + decoded_[i];  // as clients
  task.delta = true;
  task.encoded.codec = codec_->id();
  task.encoded.frames = {bytes_};  // a copy: bytes_ is reused next round
  return fedpar::encode(std::move(task), e);
}

}  // namespace fedpar
