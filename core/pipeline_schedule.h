// Pipeline schedules: the order in which one stage runs the forward and backward passes of a
// batch's m micro-batches. Backward passes run in micro-batch order in both schedules, so the
// gradients accumulate in the order a single process would add them.
//   GPipe (Huang et al. 2019): every forward, then every backward; m micro-batches in flight.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s of p runs min(p-1-s, m) warm-up
//   forwards, then alternates one forward and one backward, then drains; at most p-s in flight.
// Both flush at the end of the batch: one optimizer step per batch, no stale weights.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar {

enum class PipeSchedule { kGPipe, k1F1B };
PipeSchedule parse_pipe_schedule(std::string_view name);  // "gpipe" | "1f1b"; throws Error
const char* pipe_schedule_name(PipeSchedule s);

struct PipeOp {
  enum Kind { kForward, kBackward } kind;
  int micro;  // 0..m-1
  bool operator==(const PipeOp&) const = default;
};

// Stage `stage`'s operations for one batch, in order.
std::vector<PipeOp> pipe_ops(PipeSchedule schedule, int stage, int stages, int micro_batches);

// The most micro-batches stage `stage` holds between forward and backward under `schedule`;
// micro-batch j uses slot j % pipe_slots(...), which never collides in either schedule.
int pipe_slots(PipeSchedule schedule, int stage, int stages, int micro_batches);

// Calls on_op(stage, op) for every stage's ops, each stage's in its own order, an op only after
// the op it needs: forward j on stage s after forward j on s-1; backward j after backward j on
// s+1 (on the last stage, after its own forward j). Throws Error if the schedule deadlocks.
void pipe_walk(PipeSchedule schedule, int stages, int micro_batches,
               const std::function<void(int stage, PipeOp op)>& on_op);

// The times of one batch's ops, given what each costs. Stage s may begin at `start`; its i-th op
// (pipe_ops order) computes for op_seconds[i] once the stage is free and its input has come. An op
// that sends its neighbour something (a forward to the next stage, a backward to the previous)
// puts it on the stage's uplink when it ends (one for both directions): the message occupies the
// uplink send_seconds[i], behind the stage's earlier messages, and arrives latency_seconds[i]
// after it left. The receiver's downlink is not queued: a stage hears from two neighbours at most.
// Empty send_seconds / latency_seconds: the stage's messages arrive when they are sent.
struct PipeStageCosts {
  double start = 0;
  std::vector<double> op_seconds;
  std::vector<double> send_seconds, latency_seconds;
};
// When each stage ends its last op. Throws Error if a stage's costs do not match its ops.
std::vector<double> pipe_finish(PipeSchedule schedule, int stages, int micro_batches,
                                const std::vector<PipeStageCosts>& costs);

// Unit-time model of one batch: forward passes take `forward` time units and backward ones
// `backward`, on every stage, and a message arrives when it is sent. Returns the batch's time
// (makespan) and the bubble: the fraction of stage-time spent idle, which for GPipe and 1F1B is
// (p-1)/(m+p-1) whatever the ratio of backward to forward.
struct PipeTiming {
  double makespan = 0;
  double bubble = 0;
};
PipeTiming pipe_timing(PipeSchedule schedule, int stages, int micro_batches, double forward,
                       double backward);

}  // namespace fedpar
