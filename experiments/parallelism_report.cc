// The parallelism suite's section; see parallelism_report.h.
#include "experiments/parallelism_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/backend.h"
#include "core/check.h"
#include "core/dataset.h"
#include "core/median.h"
#include "core/run_records.h"
#include "core/run_spec.h"
#include "core/stage.h"
#include "core/tensor_shard.h"
#include "experiments/run_metrics.h"

namespace fedpar {
namespace {

constexpr double kMB = 1e6;

// Payload bytes all processes send in one step (tags and framing left out), from the layouts.
double formula_bytes(const RunSpec& s, Shape in, int classes, double batch) {
  const double d = s.grid_data, replica_batch = batch / d;
  const auto p = double(s.model_parts());
  if (s.topology == Topology::kAllReduce) {  // every rank sends 2 (N - 1) / N of the model
    const auto n = double(s.processes);
    return 2 * (n - 1) * double(model_layout(s.model, in, classes).total()) * 4;
  }
  double within = 0, part_params = 0;  // one replica's model-parallel traffic; its parts' sizes
  if (s.topology == Topology::kPipeline) {
    const LayerStack stack = build_layer_stack(s.model, in, classes);
    const auto ranges = pipeline_split(s.model, in, classes, s.model_parts(), s.pipeline.split);
    for (size_t k = 1; k < ranges.size(); ++k) {  // activations + labels forward, gradient back
      const double width = double(stack.inputs[size_t(ranges[k].first)].size());
      within += replica_batch * (2 * width * 4 + 4);
    }
    for (const ParamSlice& sl : stage_slices(s.model, in, classes, ranges))
      part_params += double(sl.size);
  } else {  // tensor: each all-reduce of n floats costs the t ranks 2 (t - 1) n
    const auto be = make_backend("cpu");
    for (int r = 0; r < s.model_parts(); ++r) {
      const TensorShard shard(*be, s.model, in, classes, r, s.model_parts());
      part_params += double(shard.num_params());
      if (r == 0)
        within = 2 * (p - 1) * replica_batch * double(shard.allreduce_floats_per_sample()) * 4;
    }
  }
  return d * within + 2 * (d - 1) * part_params * 4;  // + each part's ring across the replicas
}

// About the idle share a process shows when `processes` share `cores` and all compute: each gets
// cores / processes of the time. Not a floor: while others wait on a message a process gets more,
// and an op's measured time includes waiting for a core, so a share can read below it.
double idle_floor(const SplitRun& r, int cores) {
  return std::max(0.0, 1.0 - double(cores) / double(r.processes));
}

// The claims a section checked (each named once, in the order first checked) and those that
// failed: "every claim held" lists only what these runs could show.
struct Claims {
  std::vector<std::string> checked, failed;
  void check(const std::string& what) {
    if (std::find(checked.begin(), checked.end(), what) == checked.end()) checked.push_back(what);
  }
};

std::string mb(double v) { return v >= 10 ? fmt::format("{:.1f}", v) : fmt::format("{:.3f}", v); }

std::string way_name(const SplitRun& r) {
  const std::string grid = r.data > 1 ? fmt::format("{} data x ", r.data) : "";
  if (r.way == "dp") return fmt::format("data parallel x {}", r.processes);
  if (r.way == "tensor") return fmt::format("{}tensor x {}", grid, r.parts);
  return fmt::format("{}pipeline x {} {} m={}", grid, r.parts, r.schedule, r.micro_batches);
}

// On the simulated links: every way's step, data parallelism's against the fastest pipeline
// (which sends activations, not the model), and GPipe's step from one micro-batch to its best.
void simulated_claims(const std::string& model, const std::vector<const SplitRun*>& rs,
                      const SplitRun& ref, std::ostringstream& md, Claims& claims) {
  std::vector<const SplitRun*> timed;
  for (const SplitRun* r : rs)
    if (r->simulated_ms >= 0) timed.push_back(r);
  std::sort(timed.begin(), timed.end(),
            [](auto* a, auto* b) { return a->simulated_ms < b->simulated_ms; });
  md << fmt::format(
      "- **{}, time per step on the simulated links**: fastest {} ({:.1f} ms), slowest {} "
      "({:.1f} ms); data parallelism {:.1f} ms.\n",
      model, timed.front()->label, timed.front()->simulated_ms, timed.back()->label,
      timed.back()->simulated_ms, ref.simulated_ms);
  const SplitRun *pipe = nullptr, *gpipe1 = nullptr, *gpipe_best = nullptr;
  for (const SplitRun* r : timed) {
    if (r->way != "pipeline" || r->data != 1) continue;
    if (!pipe) pipe = r;  // timed is sorted: the fastest
    if (r->schedule != "gpipe") continue;
    if (r->micro_batches == 1)
      gpipe1 = r;
    else if (!gpipe_best)
      gpipe_best = r;
  }
  if (pipe) {
    md << fmt::format(
        "- **{}, links**: data parallelism's step moves {} MB and takes {:.1f} ms; {} moves {} "
        "MB and takes {:.1f} ms ({:.1f}x {}).\n",
        model, mb(ref.mb_per_step), ref.simulated_ms, pipe->label, mb(pipe->mb_per_step),
        pipe->simulated_ms,
        std::max(ref.simulated_ms, pipe->simulated_ms) /
            std::min(ref.simulated_ms, pipe->simulated_ms),
        pipe->simulated_ms < ref.simulated_ms ? "faster" : "slower");
    claims.check("on the simulated links, a pipeline's step shorter than data parallelism's");
    if (pipe->simulated_ms >= ref.simulated_ms)
      claims.failed.push_back(fmt::format(
          "{}: on the simulated links the fastest pipeline ({}, {:.1f} ms) is not faster than "
          "data parallelism ({:.1f} ms)",
          model, pipe->label, pipe->simulated_ms, ref.simulated_ms));
  }
  if (gpipe1 && gpipe_best) {
    md << fmt::format(
        "- **{}, GPipe on the links**: {:.1f} ms with one micro-batch, {:.1f} ms with {} (the "
        "stages' compute and messages overlap).\n",
        model, gpipe1->simulated_ms, gpipe_best->simulated_ms, gpipe_best->micro_batches);
    claims.check(
        "on the simulated links, GPipe's step shorter with several micro-batches than "
        "with one");
    if (gpipe_best->simulated_ms >= gpipe1->simulated_ms)
      claims.failed.push_back(fmt::format(
          "{}: on the simulated links GPipe with {} micro-batches ({:.1f} ms) is not faster than "
          "with one ({:.1f} ms)",
          model, gpipe_best->micro_batches, gpipe_best->simulated_ms, gpipe1->simulated_ms));
  }
}

}  // namespace

std::optional<std::string> split_run_refusal(const RunSpec& s) {
  if (s.topology == Topology::kPipeline || s.topology == Topology::kTensor ||
      s.topology == Topology::kAllReduce)
    return std::nullopt;
  return "the parallelism section (suite.parallelism = true) compares allreduce, pipeline and "
         "tensor runs";
}

SplitRun read_split_run(const std::filesystem::path& dir, const std::string& label) {
  const RunSpec s = read_run_spec(dir);
  if (const auto why = split_run_refusal(s)) throw Error(fmt::format("run '{}': {}", label, *why));
  SplitRun r;
  r.label = label;
  r.model = model_key(s.model);
  r.way = s.topology == Topology::kPipeline ? "pipeline"
          : s.topology == Topology::kTensor ? "tensor"
                                            : "dp";
  r.processes = s.processes;
  r.data = s.model_parallel() ? s.grid_data : s.processes;
  r.parts = s.model_parallel() ? s.model_parts() : 1;
  r.micro_batches = s.pipeline.micro_batches;
  r.schedule = pipe_schedule_name(s.pipeline.schedule);
  std::vector<double> batch, params, acts, memory, first, sent, step, idle, simulated;
  for (const RoundRecord& rec : steady_rounds(read_round_records(dir))) {
    batch.push_back(rec.samples_processed.value_or(0));
    step.push_back(step_ms(rec));
    if (rec.simulated_seconds) simulated.push_back(1e3 * *rec.simulated_seconds);
    double p = 0, a = 0, both = 0, total = 0, stage_idle = 0, span = 0;
    const auto workers = rec.workers.value_or(std::vector<WorkerRecord>{});
    for (const WorkerRecord& w : workers) {
      p = std::max(p, double(w.parameter_bytes));
      a = std::max(a, double(w.activation_bytes));
      both = std::max(both, double(w.parameter_bytes + w.activation_bytes));
      total += double(w.ring_bytes_sent + w.replica_bytes_sent.value_or(0));
      span = std::max(span, w.compute_seconds + w.allreduce_seconds);
    }
    // A stage's idle share of the step: the step is the longest stage's span (the first
    // stage's, which runs the first forward and the last backward), not its own, which for a
    // later stage ends before the earlier ones drain (its idle then fell below the schedule's).
    for (const WorkerRecord& w : workers) stage_idle += span > 0 ? 1 - w.compute_seconds / span : 0;
    if (workers.empty()) continue;
    params.push_back(p / kMB), acts.push_back(a / kMB), memory.push_back(both / kMB);
    sent.push_back(total / kMB);
    first.push_back(double(workers[0].activation_bytes) / kMB);
    idle.push_back(stage_idle / double(workers.size()));
  }
  r.batch = median(batch);
  r.parameter_mb = median(params), r.activation_mb = median(acts), r.memory_mb = median(memory);
  r.first_activation_mb = median(first);
  r.mb_per_step = median(sent), r.step_ms = median(step);
  if (!simulated.empty()) r.simulated_ms = median(simulated);
  const Dataset data = dataset_header(s.data);
  r.formula_mb = formula_bytes(s, data.shape, data.num_classes, r.batch) / kMB;
  if (r.way == "pipeline") {
    r.bubble = median(idle);
    r.bubble_formula = double(r.parts - 1) / double(r.micro_batches + r.parts - 1);
  }
  return r;
}

ParallelismSection parallelism_section(const std::vector<SplitRun>& runs, int cores) {
  ParallelismSection out;
  Claims claims;
  std::ostringstream md;
  md << "### Splitting the model against replicating it\n\n"
        "Per step, medians over the rounds after the first, without an evaluation and without "
        "the model sent to the server (as the traffic table's). Memory is the most any process "
        "holds, as its core "
        "allocated it: of parameters + gradients, of activations (their gradients and scratch "
        "for its batch), and of both together (the maxima may come from different processes); "
        "MB sent is every process's link and ring traffic together, beside the formula's "
        "payload (data parallel: 2(N-1) x the model; pipeline: each boundary's activations, "
        "labels and gradients; tensor: 2(t-1) x each all-reduce's floats; a grid adds 2(d-1) x "
        "each part across its replicas); idle is the stages' mean share of the step not computing "
        "(the step: the longest stage's span, from its TASK to its last operation), beside the "
        "schedule's bubble (p-1)/(m+p-1); GPipe's first stage holds the "
        "activations of all m micro-batches (the whole batch), 1F1B's of at most p; step is "
        "the server's wait and aggregation on this machine, on links the step on the simulated "
        "network (each "
        "process's measured compute, its messages on its link: docs/pipeline.md).\n\n"
        "| run | model | way | samples/step | parameters (MB) | activations (MB) | both (MB) | "
        "MB sent | formula (MB) | step (ms) | on links (ms) | idle | bubble formula |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::map<std::string, std::vector<const SplitRun*>> by_model;
  for (const SplitRun& r : runs) {
    by_model[r.model].push_back(&r);
    md << fmt::format(
        "| {} | {} | {} | {:.0f} | {} | {} | {} | {} | {} | {:.1f} | {} | {} | {} |\n", r.label,
        r.model, way_name(r), r.batch, mb(r.parameter_mb), mb(r.activation_mb), mb(r.memory_mb),
        mb(r.mb_per_step), mb(r.formula_mb), r.step_ms,
        r.simulated_ms >= 0 ? fmt::format("{:.1f}", r.simulated_ms) : "-",
        r.bubble >= 0 ? fmt::format("{:.2f}", r.bubble) : "-",
        r.bubble_formula >= 0 ? fmt::format("{:.2f}", r.bubble_formula) : "-");
    const double ratio = r.formula_mb > 0 ? r.mb_per_step / r.formula_mb : 0;
    claims.check("bytes within 1% above the formulas' payload (the rest is tags)");
    if (ratio < 1 || ratio > 1.01)
      claims.failed.push_back(fmt::format("{}: sent {} MB per step, the formula says {} ({:.4f}x)",
                                          r.label, mb(r.mb_per_step), mb(r.formula_mb), ratio));
    out.json.push_back({{"label", r.label},
                        {"model", r.model},
                        {"way", r.way},
                        {"data", r.data},
                        {"parts", r.parts},
                        {"micro_batches", r.micro_batches},
                        {"schedule", r.schedule},
                        {"batch", r.batch},
                        {"parameter_mb", r.parameter_mb},
                        {"activation_mb", r.activation_mb},
                        {"memory_mb", r.memory_mb},
                        {"first_activation_mb", r.first_activation_mb},
                        {"mb_per_step", r.mb_per_step},
                        {"formula_mb", r.formula_mb},
                        {"step_ms", r.step_ms},
                        {"simulated_ms", r.simulated_ms},
                        {"bubble", r.bubble},
                        {"bubble_formula", r.bubble_formula}});
  }
  md << "\n#### When each way wins (computed from the table)\n\n";
  for (const auto& [model, rs] : by_model) {
    const auto dp = std::find_if(rs.begin(), rs.end(), [](auto* r) { return r->way == "dp"; });
    if (dp == rs.end()) {
      md << fmt::format("- {}: no data-parallel run to compare with.\n", model);
      continue;
    }
    const SplitRun& ref = **dp;
    // Memory: the largest part each way holds against a whole replica.
    const SplitRun* leanest = nullptr;
    for (const SplitRun* r : rs) {
      if (r->way == "dp") continue;
      claims.check("every split's largest process holding fewer parameters than a replica");
      if (r->parameter_mb >= ref.parameter_mb)
        claims.failed.push_back(
            fmt::format("{}: its largest process holds {} MB of parameters, "
                        "not less than a replica's {}",
                        r->label, mb(r->parameter_mb), mb(ref.parameter_mb)));
      if (!leanest || r->memory_mb < leanest->memory_mb) leanest = r;
    }
    if (leanest)
      md << fmt::format(
          "- **{}, memory-bound**: a replica costs every process {} MB (parameters + gradients "
          "{}, activations {}); {} ({}) needs at most {} MB in any process, {:.0f}% of it. Where "
          "a replica does not fit, split the model.\n",
          model, mb(ref.memory_mb), mb(ref.parameter_mb), mb(ref.activation_mb), leanest->label,
          way_name(*leanest), mb(leanest->memory_mb), 100 * leanest->memory_mb / ref.memory_mb);
    // Communication: data parallelism's bytes do not depend on the batch, a split's grow with it.
    for (const char* way : {"pipeline", "tensor"}) {
      const SplitRun* best = nullptr;
      for (const SplitRun* r : rs)
        if (r->way == way && r->data == 1 && (!best || r->mb_per_step < best->mb_per_step))
          best = r;
      if (!best || best->mb_per_step <= 0) continue;
      const double even = best->batch * ref.mb_per_step / best->mb_per_step;
      md << fmt::format(
          "- **{}, communication-bound, {}**: data parallelism sends {} MB per step whatever the "
          "batch; {} sends {} MB at {:.0f} samples per step, in proportion to the batch: it "
          "sends less below about {:.0f} samples per step{}.\n",
          model, way, mb(ref.mb_per_step), best->label, mb(best->mb_per_step), best->batch, even,
          best->batch < even
              ? fmt::format(" (here {:.1f}x less)", ref.mb_per_step / best->mb_per_step)
              : fmt::format(" (here {:.1f}x more)", best->mb_per_step / ref.mb_per_step));
    }
    // Time on this machine.
    std::vector<const SplitRun*> by_time(rs.begin(), rs.end());
    std::sort(by_time.begin(), by_time.end(),
              [](auto* a, auto* b) { return a->step_ms < b->step_ms; });
    md << fmt::format(
        "- **{}, time per step here**: fastest {} ({:.1f} ms), then {} ({:.1f} ms); slowest {} "
        "({:.1f} ms); data parallelism {:.1f} ms.\n",
        model, by_time[0]->label, by_time[0]->step_ms, by_time.size() > 1 ? by_time[1]->label : "-",
        by_time.size() > 1 ? by_time[1]->step_ms : 0.0, by_time.back()->label,
        by_time.back()->step_ms, ref.step_ms);
    if (ref.simulated_ms >= 0) simulated_claims(model, rs, ref, md, claims);
    // Pipelines: the bubble against micro-batches, and what each schedule holds.
    std::map<std::pair<std::string, int>, const SplitRun*> pipe;
    for (const SplitRun* r : rs)
      if (r->way == "pipeline" && r->data == 1) pipe[{r->schedule, r->micro_batches}] = r;
    for (const char* sched : {"gpipe", "1f1b"}) {
      std::vector<std::string> steps;
      const SplitRun *fewest = nullptr, *most = nullptr;
      for (const auto& [key, r] : pipe)
        if (key.first == sched) {
          steps.push_back(fmt::format("m={} {:.2f} ({:.2f})", key.second, r->bubble,
                                      std::max(r->bubble_formula, idle_floor(*r, cores))));
          if (!fewest) fewest = r;
          most = r;
        }
      if (!fewest || fewest == most) continue;
      const bool shrank = most->bubble < fewest->bubble;
      // Processes that share cores wait for one as much as for their neighbours: there the
      // measured idle follows the machine's load, and is shown but not checked.
      const bool shared = most->processes > cores;
      md << fmt::format(
          "- **{}, {} bubble**, measured idle (expected: the formula{}): {}; from m={} to m={} it "
          "{}{}.\n",
          model, sched,
          shared ? fmt::format(", or about {:.2f} where {} processes share {} cores, each then "
                               "getting about {} of {} of the time; not a floor: a process gets "
                               "more while others wait",
                               idle_floor(*most, cores), most->processes, cores, cores,
                               most->processes)
                 : "",
          fmt::join(steps, ", "), fewest->micro_batches, most->micro_batches,
          shrank ? "shrank" : "did not shrink (each micro-batch adds messages and waits)",
          shared ? " (not checked here: with processes sharing cores, the idle share measures "
                   "waiting for a core as much as the schedule; the simulated links' step is "
                   "the schedule's)"
                 : "");
      // GPipe's stages run m forwards back to back: more micro-batches must keep them busier.
      if (std::string(sched) == "gpipe" && !shared)
        claims.check("GPipe's idle share shrinking with micro-batches");
      if (std::string(sched) == "gpipe" && !shared && !shrank)
        claims.failed.push_back(fmt::format(
            "{} {}: the idle share did not shrink from m={} ({:.2f}) to m={} ({:.2f})", model,
            sched, fewest->micro_batches, fewest->bubble, most->micro_batches, most->bubble));
    }
    for (const auto& [key, g] : pipe) {
      if (key.first != "gpipe" || key.second <= g->parts) continue;
      const auto f = pipe.find({"1f1b", key.second});
      if (f == pipe.end()) continue;
      const SplitRun* o = f->second;
      md << fmt::format(
          "- **{}, m={}**: the first stage holds {} MB of activations under GPipe (all {} "
          "micro-batches) and {} MB under 1F1B (at most {} in flight).\n",
          model, key.second, mb(g->first_activation_mb), key.second, mb(o->first_activation_mb),
          g->parts);
      claims.check("1F1B holding fewer activations than GPipe");
      if (o->first_activation_mb >= g->first_activation_mb)
        claims.failed.push_back(
            fmt::format("{} m={}: 1F1B's first stage holds {} MB, not less than "
                        "GPipe's {}",
                        model, key.second, mb(o->first_activation_mb), mb(g->first_activation_mb)));
    }
  }
  out.failed = claims.failed;
  if (!out.failed.empty()) {
    md << "\n**Claims that failed:**\n\n";
    for (const auto& f : out.failed) md << "- " << f << "\n";
  } else if (!claims.checked.empty()) {
    md << fmt::format("\nEvery claim these runs could check held: {}.\n",
                      fmt::join(claims.checked, "; "));
  }
  out.markdown = md.str();
  return out;
}

}  // namespace fedpar
