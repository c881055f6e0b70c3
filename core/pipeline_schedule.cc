// GPipe and 1F1B operation orders, and their unit-time model.
#include "core/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"

namespace fedpar {

PipeSchedule parse_pipe_schedule(std::string_view name) {
  if (name == "gpipe") return PipeSchedule::kGPipe;
  if (name == "1f1b") return PipeSchedule::k1F1B;
  throw Error(fmt::format("unknown pipeline schedule '{}' (valid: gpipe, 1f1b)", name));
}

const char* pipe_schedule_name(PipeSchedule s) {
  return s == PipeSchedule::kGPipe ? "gpipe" : "1f1b";
}

namespace {
int warmup(PipeSchedule schedule, int stage, int stages, int m) {
  return schedule == PipeSchedule::kGPipe ? m : std::min(stages - 1 - stage, m);
}
void check(int stage, int stages, int m) {
  FEDPAR_CHECK(stages >= 1 && stage >= 0 && stage < stages && m >= 1)
      << "pipeline: stage " << stage << " of " << stages << ", " << m << " micro-batches";
}
}  // namespace

std::vector<PipeOp> pipe_ops(PipeSchedule schedule, int stage, int stages, int m) {
  check(stage, stages, m);
  const int w = warmup(schedule, stage, stages, m);
  std::vector<PipeOp> ops;
  for (int j = 0; j < w; ++j) ops.push_back({PipeOp::kForward, j});
  for (int j = 0; j < m - w; ++j) {  // steady state: one forward, one backward
    ops.push_back({PipeOp::kForward, w + j});
    ops.push_back({PipeOp::kBackward, j});
  }
  for (int j = m - w; j < m; ++j) ops.push_back({PipeOp::kBackward, j});
  return ops;
}

int pipe_slots(PipeSchedule schedule, int stage, int stages, int m) {
  check(stage, stages, m);
  const int w = warmup(schedule, stage, stages, m);
  return std::min(m, w + 1);
}

void pipe_walk(PipeSchedule schedule, int p, int m,
               const std::function<void(int stage, PipeOp op)>& on_op) {
  std::vector<std::vector<PipeOp>> ops(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s) ops[size_t(s)] = pipe_ops(schedule, s, p, m);
  std::vector<std::vector<char>> f_done(size_t(p), std::vector<char>(size_t(m), 0)),
      b_done = f_done;
  std::vector<size_t> next(size_t(p), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      for (size_t& i = next[size_t(s)]; i < ops[size_t(s)].size(); ++i) {
        const PipeOp op = ops[size_t(s)][i];
        const size_t j = size_t(op.micro);
        const bool ready = op.kind == PipeOp::kForward
                               ? s == 0 || f_done[size_t(s - 1)][j]
                               : (s + 1 < p ? b_done[size_t(s + 1)][j] : f_done[size_t(s)][j]);
        if (!ready) break;
        on_op(s, op);
        (op.kind == PipeOp::kForward ? f_done : b_done)[size_t(s)][j] = 1;
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s)
    if (next[size_t(s)] != ops[size_t(s)].size())
      throw Error(fmt::format("pipeline schedule {} deadlocks at stage {} of {}",
                              pipe_schedule_name(schedule), s, p));
}

PipeTiming pipe_timing(PipeSchedule schedule, int p, int m, double fwd, double bwd) {
  // Each op starts when its stage is free and its input has come (pipe_walk's dependencies).
  std::vector<std::vector<double>> f_end(size_t(p), std::vector<double>(size_t(m), 0)),
      b_end = f_end;
  std::vector<double> free(size_t(p), 0);
  pipe_walk(schedule, p, m, [&](int s, PipeOp op) {
    const size_t j = size_t(op.micro);
    double ready = 0;
    if (op.kind == PipeOp::kForward) {
      if (s > 0) ready = f_end[size_t(s - 1)][j];
    } else {
      ready = s + 1 < p ? b_end[size_t(s + 1)][j] : f_end[size_t(s)][j];
    }
    free[size_t(s)] = std::max(ready, free[size_t(s)]) + (op.kind == PipeOp::kForward ? fwd : bwd);
    (op.kind == PipeOp::kForward ? f_end : b_end)[size_t(s)][j] = free[size_t(s)];
  });
  PipeTiming t;
  t.makespan = *std::max_element(free.begin(), free.end());
  t.bubble = 1.0 - double(p) * m * (fwd + bwd) / (double(p) * t.makespan);
  return t;
}

}  // namespace fedpar
