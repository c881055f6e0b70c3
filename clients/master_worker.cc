// MasterWorker; see master_worker.h.
#include "clients/master_worker.h"

#include <fmt/format.h>

#include "core/check.h"

namespace fedpar {

MasterWorker::MasterWorker(Backend& be, const ModelSpec& spec, const Dataset& data)
    : be_(be), spec_(spec), data_(data) {}

std::vector<float> MasterWorker::forward(uint32_t client, std::span<const uint32_t> rows,
                                         std::span<const float> params) {
  auto& slot = replicas_[client];
  if (!slot)
    slot.reset(new Replica{Model(be_, spec_, data_.shape, data_.num_classes),
                           BatchBuffer(be_, data_.dim())});
  Replica& r = *slot;
  r.model.set_params_host(params);
  r.batch.load(data_, rows);
  r.rows = int(rows.size());
  const float* logits = r.model.forward(r.batch.x(), r.rows);
  std::vector<float> out(rows.size() * classes());
  if (!out.empty()) be_.download(out.data(), logits, out.size() * sizeof(float));
  return out;
}

std::vector<float> MasterWorker::backward(uint32_t client, std::span<const float> dlogits) {
  auto it = replicas_.find(client);
  if (it == replicas_.end() || it->second->rows < 0)
    throw Error(fmt::format("backward for client {} without its forward", client));
  Replica& r = *it->second;
  if (dlogits.size() != size_t(r.rows) * classes())
    throw Error(fmt::format("client {}: {} dlogits for a forward of {} rows x {} classes", client,
                            dlogits.size(), r.rows, classes()));
  dlogits_.reserve(be_, std::max<size_t>(1, dlogits.size()));
  dlogits_.upload(dlogits.data(), dlogits.size());
  r.model.zero_grads();
  r.model.backward(r.batch.x(), dlogits_.data(), r.rows);
  r.rows = -1;
  return r.model.grads_host();
}

}  // namespace fedpar
