// Partition statistics; see stats.h.
#include "partitioners/stats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_integer.h"
#include "core/median.h"

namespace fedpar {

PartitionStats manifest_stats(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("cannot read {}", file.string()));
  const auto j = nlohmann::json::parse(in);
  size_t bound = 0;  // the validation needs a dataset size; the largest index bounds it
  for (const auto& cl : j.at("clients"))
    for (const char* part : {"indices", "held_out"})  // held_out: partition.holdout's
      for (const auto& ix : cl.value(part, nlohmann::json::array()))
        bound =
            std::max(bound, size_t(json_integer<uint32_t>(ix, file.string() + ": an index")) + 1);
  return partition_stats(manifest_from_json(j, bound));
}

Summary summarize(std::vector<double> v) {
  if (v.empty()) return {};
  double sum = 0;
  for (double x : v) sum += x;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {*lo, median(v), *hi, sum / double(v.size())};
}

std::string unassigned_note(const PartitionStats& s, size_t dataset_size) {
  const size_t held = s.assigned + s.held_out;
  if (held >= dataset_size) return "";
  std::vector<size_t> none;  // labels no client holds
  for (size_t l = 0; l < s.global_distribution.size(); ++l)
    if (s.global_distribution[l] == 0) none.push_back(l);
  return fmt::format(
      "{} of {} training samples go to no client{}", dataset_size - held, dataset_size,
      none.empty() ? "" : fmt::format(" (no client holds label {})", fmt::join(none, ", ")));
}

PartitionStats partition_stats(const Manifest& m) {
  PartitionStats s;
  const size_t L = m.clients.empty() ? 0 : m.clients[0].label_histogram.size();
  std::vector<double> global(L, 0);
  for (const auto& c : m.clients)
    for (size_t l = 0; l < L; ++l) global[l] += double(c.label_histogram[l]);
  double total = 0;
  for (double g : global) total += g;
  for (double& g : global) g = total > 0 ? g / total : 0;
  s.global_distribution = global;
  s.assigned = size_t(total);
  s.held_out = m.held_out();
  std::vector<double> sizes, present, ent, emd, kl;
  for (const auto& c : m.clients) {
    ClientStats cs{.id = c.id, .size = c.indices.size()};
    for (size_t l = 0; l < L; ++l) {
      const double p = cs.size ? double(c.label_histogram[l]) / double(cs.size) : 0;
      cs.labels_present += c.label_histogram[l] > 0;
      if (p > 0) {
        cs.entropy_bits -= p * std::log2(p);
        cs.kl += p * std::log(p / global[l]);
      }
      cs.emd += std::abs(p - global[l]);
    }
    sizes.push_back(double(cs.size));
    s.clients.push_back(cs);
    if (cs.size == 0) {  // no distribution: its "EMD 1" would skew the medians
      s.empty_clients.push_back(cs.id);
      continue;
    }
    present.push_back(cs.labels_present);
    ent.push_back(cs.entropy_bits);
    emd.push_back(cs.emd);
    kl.push_back(cs.kl);
  }
  s.size = summarize(sizes);
  s.labels_present = summarize(present);
  s.entropy_bits = summarize(ent);
  s.emd = summarize(emd);
  s.kl = summarize(kl);
  return s;
}

std::string format_stats(const Manifest& m, const PartitionStats& s, size_t max_rows) {
  std::string out = fmt::format(
      "scheme {} | {} clients | {} samples assigned{} | seed {} | hash {}\n\n", m.scheme,
      m.clients.size(), s.assigned,
      s.held_out ? fmt::format(" to train on, {} held out", s.held_out) : "", m.seed, m.hash);
  out += fmt::format("{:<22} {:>10} {:>10} {:>10} {:>10}\n", "per client", "min", "median", "max",
                     "mean");
  auto row = [&](const char* name, const Summary& x, const char* f) {
    out +=
        fmt::format(fmt::runtime(std::string("{:<22} ") + f + " " + f + " " + f + " " + f + "\n"),
                    name, x.min, x.median, x.max, x.mean);
  };
  row("size", s.size, "{:>10.0f}");
  row("labels present", s.labels_present, "{:>10.1f}");
  row("label entropy (bits)", s.entropy_bits, "{:>10.3f}");
  row("EMD to global", s.emd, "{:>10.3f}");
  row("KL to global (nats)", s.kl, "{:>10.3f}");
  if (const size_t empty = s.empty_clients.size())  // an empty client has no label distribution
    out += fmt::format("(the label rows over the {} clients holding samples; {} hold none)\n",
                       s.clients.size() - empty, empty);
  out += fmt::format("\n{:>6} {:>7} {:>7} {:>9} {:>7} {:>7}\n", "client", "size", "labels",
                     "entropy", "EMD", "KL");
  for (size_t i = 0; i < s.clients.size() && i < max_rows; ++i) {
    const auto& c = s.clients[i];
    if (c.size == 0)
      out += fmt::format("{:>6} {:>7} {:>7} {:>9} {:>7} {:>7}\n", c.id, 0, 0, "-", "-", "-");
    else
      out += fmt::format("{:>6} {:>7} {:>7} {:>9.3f} {:>7.3f} {:>7.3f}\n", c.id, c.size,
                         c.labels_present, c.entropy_bits, c.emd, c.kl);
  }
  if (s.clients.size() > max_rows)
    out += fmt::format("   ... {} more clients in manifest.json\n", s.clients.size() - max_rows);
  return out;
}

}  // namespace fedpar
