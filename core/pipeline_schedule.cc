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

std::vector<double> pipe_finish(PipeSchedule schedule, int p, int m,
                                const std::vector<PipeStageCosts>& costs) {
  if (costs.size() != size_t(p))
    throw Error(fmt::format("pipe_finish: {} stages' costs for {} stages", costs.size(), p));
  for (int s = 0; s < p; ++s) {
    const PipeStageCosts& c = costs[size_t(s)];
    const size_t ops = 2 * size_t(m);
    if (c.op_seconds.size() != ops || (!c.send_seconds.empty() && c.send_seconds.size() != ops) ||
        c.latency_seconds.size() != c.send_seconds.size())
      throw Error(fmt::format(
          "pipe_finish: stage {} has {} op times, {} send times and {} "
          "latencies for its {} ops",
          s, c.op_seconds.size(), c.send_seconds.size(), c.latency_seconds.size(), ops));
  }
  // Each op starts when its stage is free and its input has come (pipe_walk's dependencies); a
  // stage's ops run in order, so its uplink, which carries its forward and its backward sends
  // alike, sees its messages in the order they leave.
  std::vector<std::vector<double>> f_in(size_t(p), std::vector<double>(size_t(m), 0)),
      b_in = f_in;  // when micro-batch j's activations / their gradient are at stage s
  std::vector<double> busy(static_cast<size_t>(p), 0.0), uplink = busy;
  std::vector<size_t> at(size_t(p), 0);
  for (int s = 0; s < p; ++s) busy[size_t(s)] = costs[size_t(s)].start;
  pipe_walk(schedule, p, m, [&](int s, PipeOp op) {
    const PipeStageCosts& c = costs[size_t(s)];
    const size_t i = at[size_t(s)]++, j = size_t(op.micro);
    const bool forward = op.kind == PipeOp::kForward;
    double& t = busy[size_t(s)];
    // a forward on stage 0 has its batch; the last stage's backward follows its own forward
    const double ready =
        forward ? (s > 0 ? f_in[size_t(s)][j] : 0) : (s + 1 < p ? b_in[size_t(s)][j] : 0);
    t = std::max(t, ready) + c.op_seconds[i];
    const int to = forward ? s + 1 : s - 1;
    if (to < 0 || to >= p) return;
    double arrive = t;
    if (!c.send_seconds.empty()) {
      double& link = uplink[size_t(s)];
      link = std::max(link, t) + c.send_seconds[i];
      arrive = link + c.latency_seconds[i];
    }
    (forward ? f_in : b_in)[size_t(to)][j] = arrive;
  });
  return busy;
}

PipeTiming pipe_timing(PipeSchedule schedule, int p, int m, double fwd, double bwd) {
  std::vector<PipeStageCosts> costs(static_cast<size_t>(p));
  for (int s = 0; s < p; ++s)
    for (const PipeOp op : pipe_ops(schedule, s, p, m))
      costs[size_t(s)].op_seconds.push_back(op.kind == PipeOp::kForward ? fwd : bwd);
  const std::vector<double> finish = pipe_finish(schedule, p, m, costs);
  PipeTiming t;
  t.makespan = *std::max_element(finish.begin(), finish.end());
  t.bubble = 1.0 - double(p) * m * (fwd + bwd) / (double(p) * t.makespan);
  return t;
}

}  // namespace fedpar
