// The in-process pipeline: pipe_walk's order with buffers standing in for the links.
#include "core/pipeline_local.h"

#include "core/check.h"

namespace fedpar {

std::vector<MicroBatch> split_micro_batches(int batch, int m) {
  FEDPAR_CHECK(m >= 1 && batch >= m)
      << "a batch of " << batch << " cannot make " << m << " micro-batches";
  std::vector<MicroBatch> out;
  int at = 0;
  for (int j = 0; j < m; ++j) {
    const int size = batch / m + (j < batch % m ? 1 : 0);
    out.push_back({at, size});
    at += size;
  }
  return out;
}

BatchStats pipeline_step_local(std::span<Stage* const> stages, PipeSchedule schedule, int m,
                               const float* x, const int32_t* y, int batch) {
  const int p = int(stages.size());
  FEDPAR_CHECK(p >= 1 && stages.back()->is_last()) << "the pipeline must end with the last stage";
  const std::vector<MicroBatch> micro = split_micro_batches(batch, m);
  Backend& be = stages[0]->backend();
  // What stage s sends: activations forward (into s+1), gradients backward (into s-1).
  std::vector<std::vector<DeviceArray<float>>> acts(static_cast<size_t>(p)),
      grads(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) {
    acts[size_t(s)].resize(size_t(m));
    grads[size_t(s)].resize(size_t(m));
  }
  BatchStats total;
  const float scale = 1.0f / float(batch);
  pipe_walk(schedule, p, m, [&](int s, PipeOp op) {
    Stage& st = *stages[size_t(s)];
    const size_t j = size_t(op.micro);
    const MicroBatch mb = micro[j];
    const int slot = op.micro % pipe_slots(schedule, s, p, m);
    if (op.kind == PipeOp::kForward) {
      const float* in =
          s == 0 ? x + size_t(mb.offset) * st.input_shape().size() : acts[size_t(s - 1)][j].data();
      const float* out = st.forward(slot, in, mb.size);
      if (!st.is_last()) {
        const size_t n = size_t(mb.size) * st.output_shape().size();
        acts[size_t(s)][j] = DeviceArray<float>(be, n);
        be.copy(acts[size_t(s)][j].data(), out, n * sizeof(float));
      }
      if (s > 0) acts[size_t(s - 1)][j] = {};  // consumed
      return;
    }
    float* dx = nullptr;
    if (!st.is_first()) {
      grads[size_t(s)][j] = DeviceArray<float>(be, size_t(mb.size) * st.input_shape().size());
      dx = grads[size_t(s)][j].data();
    }
    if (st.is_last()) {
      total += st.loss_backward(slot, y + mb.offset, scale, dx);
    } else {
      st.backward(slot, grads[size_t(s + 1)][j].data(), dx);
      grads[size_t(s + 1)][j] = {};
    }
  });
  return total;
}

}  // namespace fedpar
