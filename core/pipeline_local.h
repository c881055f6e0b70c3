// One batch through a pipeline of stages in one process: the reference that the pipeline
// topology's stage processes must match bit for bit, and the test of the schedules. Activations
// and their gradients go from stage to stage through buffers, in the order pipe_walk allows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/pipeline_schedule.h"
#include "core/stage.h"

namespace fedpar {

// Micro-batch j's rows of a batch of `batch` split into m: the first batch % m get one more.
struct MicroBatch {
  int offset = 0, size = 0;
};
std::vector<MicroBatch> split_micro_batches(int batch, int micro_batches);

// Runs x (batch, input) with labels y through `stages` (in order; each with at least
// pipe_slots(...) slots) as `micro_batches` micro-batches, ADDING the mean-loss gradient of the
// batch into every stage's grads(). Returns the batch's loss sum and correct count.
BatchStats pipeline_step_local(std::span<Stage* const> stages, PipeSchedule schedule,
                               int micro_batches, const float* x, const int32_t* y, int batch);

}  // namespace fedpar
