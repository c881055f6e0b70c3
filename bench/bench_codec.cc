// Codec speed on one core: encode and decode of a fixed-seed normal vector (1M floats by default)
// beside a memcpy of the same bytes, every row once per round for --reps rounds (the machine is
// noisy: a slow spell hits all rows alike). Each repetition is timed twice: the thread's CPU time
// (the time it held a core: what the code costs, whatever else the machine runs) and wall time
// (which adds the time the thread waited for a core). The table gives the medians of both and the
// fastest repetition's CPU time; GB/s and the verdicts use the CPU-time medians. GB/s counts float
// input (4 bytes a value) for encode and decode alike. Exits 1 unless top-k encodes at >= 1 GB/s
// (ratios 0.01 and 0.001) and QSGD (s = 4), scaled_sign and sign encode and decode at >= 3 GB/s.
// Rows "+ error feedback encode" time a client's encode with its residual (no goal).
// Usage: bench_codec [--floats 1048576] [--reps 30] [--warmup 3] [--only qsgd]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/codec/codec.h"
#include "core/codec/error_feedback.h"
#include "core/median.h"
#include "core/rng.h"

namespace fedpar {
namespace {

struct Row {
  std::string name;
  std::function<void(int rep)> run;
  double goal_gbs = 0;            // 0: no goal
  std::vector<double> cpu, wall;  // seconds per repetition
  size_t bytes = 0;               // the encoding's size (encode and decode rows)
};

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Runs f once; appends its CPU and wall seconds to `r` when `keep`.
void time_once(Row& r, int rep, bool keep) {
  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = thread_seconds();
  r.run(rep);
  const double c = thread_seconds() - c0;
  const double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  if (keep) r.cpu.push_back(c), r.wall.push_back(w);
}

int run(size_t floats, int reps, int warmup, const std::string& only) {
  std::vector<float> v(floats), out(floats);
  Rng rng(1, "bench_codec");
  for (float& x : v) x = float(rng.normal());
  std::vector<float> copy(floats);

  std::vector<Row> rows;
  rows.push_back(
      {"memcpy (reference)", [&](int) { std::memcpy(copy.data(), v.data(), 4 * floats); }});
  rows.back().bytes = 4 * floats;
  // An encode row and, when decode_goal >= 0, a decode row of its bytes.
  auto add = [&](const std::string& label, const std::string& codec, const CodecParams& p,
                 double encode_goal, double decode_goal, bool decode, bool round_per_rep) {
    if (label.find(only) == std::string::npos) return;
    std::shared_ptr<Codec> c = make_codec(codec, p);
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    auto ctx = std::make_shared<CodecContext>(CodecContext{.round = 0, .client = 3});
    rows.push_back({label + " encode",
                    [&v, c, bytes, ctx, round_per_rep](int rep) {
                      if (round_per_rep) ctx->round = uint64_t(rep + 1000);
                      c->encode(v, *ctx, *bytes);
                    },
                    encode_goal});
    c->encode(v, *ctx, *bytes);
    rows.back().bytes = bytes->size();
    if (!decode) return;
    rows.push_back({label + " decode",
                    [&out, c, bytes, ctx](int) {
                      const std::string why = c->decode(*bytes, *ctx, out);
                      FEDPAR_CHECK(why.empty()) << c->name() << ": " << why;
                    },
                    decode_goal});
    rows.back().bytes = bytes->size();
  };
  add("fp16", "fp16", {}, 0, 0, true, false);
  add("bf16", "bf16", {}, 0, 0, false, false);
  add("topk 0.01", "topk", {.ratio = 0.01}, 1.0, 0, true, false);
  add("topk 0.001", "topk", {.ratio = 0.001}, 1.0, 0, true, false);
  // a new round per repetition: the encode draws its index set; the decode that follows in the
  // same round finds it cached, as the server does for every message of a round after the first
  add("randk 0.01", "randk", {.ratio = 0.01}, 0, 0, true, true);
  add("qsgd s=4", "qsgd", {.levels = 4, .bucket = 512}, 3.0, 3.0, true, false);
  add("scaled_sign", "scaled_sign", {}, 3.0, 3.0, true, false);
  add("sign", "sign", {}, 3.0, 3.0, true, false);
  // A client's encode with error feedback (p = e + g, encode p, the new residual), a new round per
  // repetition: beside the plain encode rows, what the residual costs.
  auto add_ef = [&](const std::string& label, const std::string& codec, const CodecParams& p) {
    if (label.find(only) == std::string::npos) return;
    std::shared_ptr<Codec> c = make_codec(codec, p);
    auto ef = std::make_shared<ErrorFeedback>(*c);
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    rows.push_back({label + " + error feedback encode", [&v, c, ef, bytes](int rep) {
                      ef->encode(0, v, {.round = uint64_t(rep + 1000), .client = 3}, 0.05f, *bytes);
                    }});
    ef->encode(0, v, {.round = 0, .client = 3}, 0.05f, *bytes);
    rows.back().bytes = bytes->size();
  };
  add_ef("topk 0.01", "topk", {.ratio = 0.01});
  add_ef("randk 0.01", "randk", {.ratio = 0.01});
  add_ef("scaled_sign", "scaled_sign", {});

  for (int rep = -warmup; rep < reps; ++rep)
    for (Row& r : rows) time_once(r, rep, rep >= 0);

  const double gb = 4.0 * double(floats) / 1e9;
  const double ref = median(rows[0].cpu);
  fmt::print(
      "| row | median CPU ms | GB/s of float input | x memcpy | encoded bytes | median wall ms "
      "| fastest CPU ms |\n");
  fmt::print("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows) {
    const double m = median(r.cpu);
    fmt::print("| {} | {:.3f} | {:.2f} | {:.2f} | {} | {:.3f} | {:.3f} |\n", r.name, m * 1e3,
               gb / m, m / ref, r.bytes, median(r.wall) * 1e3,
               *std::min_element(r.cpu.begin(), r.cpu.end()) * 1e3);
  }
  fmt::print(
      "\n{} floats, {} rounds of every row (after {} warm-up rounds), medians; one core; GB/s and "
      "verdicts from CPU time\n",
      floats, reps, warmup);
  bool ok = true;
  for (const Row& r : rows) {
    if (r.goal_gbs == 0) continue;
    const double g = gb / median(r.cpu);
    const bool held = g >= r.goal_gbs;
    ok = ok && held;
    fmt::print("{} >= {} GB/s: {} ({:.2f} GB/s)\n", r.name, r.goal_gbs, held ? "yes" : "NO", g);
  }
  fmt::print("all codec speed goals held: {}\n", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace fedpar

int main(int argc, char** argv) {
  CLI::App app{"fedpar codec speed on one core beside memcpy"};
  size_t floats = size_t{1} << 20;
  int reps = 30, warmup = 3;
  std::string only;
  app.add_option("--floats", floats, "vector length")
      ->capture_default_str()
      ->check(CLI::Range(size_t{8}, size_t{1} << 28));
  app.add_option("--reps", reps, "timed rounds of every row")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed rounds first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--only", only, "only the codec rows whose name contains this (and memcpy)");
  CLI11_PARSE(app, argc, argv);
  try {
    return fedpar::run(floats, reps, warmup, only);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_codec: {}\n", e.what());
    return 2;
  }
}
