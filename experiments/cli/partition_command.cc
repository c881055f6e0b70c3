// `fedpar partition`: split a dataset's training set among clients, print the statistics, and
// write DIR/manifest.json, DIR/partition.svg and DIR/stats.json.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/count_users.h"
#include "core/dataset.h"
#include "core/model_data_config.h"
#include "core/run_spec.h"
#include "core/unread_settings.h"
#include "experiments/cli/commands.h"
#include "experiments/cli/data_flags.h"
#include "partitioners/partition.h"
#include "partitioners/plot_svg.h"
#include "partitioners/stats.h"

namespace fedpar {
namespace {

struct PartitionArgs {
  DataOptions data;
  PartitionParams params = resolve_partition_params(make_run_config(), 1);  // a run's defaults
  std::string out;
  size_t rows = 10;
  std::string config;             // a run config: its data and partition, as its run splits
  std::vector<std::string> sets;  // --set KEY=VALUE on it
};

// The flag of a [partition] key: "--min-size" for min_size.
std::string flag_of(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return "--" + key;
}

// `through_config`: the split is a run config's, whose keys the advice names.
int run_partition(const PartitionArgs& a, bool through_config = false) {
  check_csv_keys(a.data);
  TrainTest tt = load_dataset(a.data);
  const Dataset& train = tt.train;
  const auto t0 = std::chrono::steady_clock::now();
  const Manifest m = partition(
      {train.name, train.content_hash(), train.y, train.user, train.num_classes}, a.params);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const PartitionStats st = partition_stats(m);
  fmt::print("{}", format_stats(m, st, a.rows));
  const std::string left_out = unassigned_note(st, train.size());
  if (!left_out.empty()) fmt::print(stderr, "fedpar partition: warning: {}\n", left_out);
  for (const std::string& n : m.notes) fmt::print(stderr, "fedpar partition: warning: {}\n", n);
  const std::vector<uint32_t>& empty = st.empty_clients;  // a run refuses the split
  if (!empty.empty())
    fmt::print(stderr,
               "fedpar partition: warning: {} client(s) get no samples (client {}{}): a run "
               "refuses this split; {}\n",
               empty.size(),
               fmt::join(empty.begin(), empty.begin() + std::min<size_t>(empty.size(), 10), ", "),
               empty.size() > 10 ? ", ..." : "", empty_client_advice(a.params, !through_config));
  // how many of the training samples the clients hold, beside the table's "assigned"
  const std::string split =
      fmt::format("split {} training samples{}", train.size(),
                  left_out.empty() ? "" : fmt::format(" ({} assigned)", st.assigned));
  if (a.out.empty()) {
    fmt::print("\n{} in {:.1f} ms (--out DIR writes manifest.json, stats.json and partition.svg)\n",
               split, ms);
    return 0;
  }

  namespace fs = std::filesystem;
  // Another split's manifest is not overwritten without a word (the same split's is rewritten)
  if (const fs::path old = fs::path(a.out) / "manifest.json"; fs::exists(old)) {
    const auto j = nlohmann::json::parse(std::ifstream(old), nullptr, /*allow_exceptions=*/false);
    const std::string old_hash = j.is_object() && j.contains("hash") && j["hash"].is_string()
                                     ? j["hash"].get<std::string>()
                                     : "";
    if (old_hash != m.hash)
      throw Error(fmt::format(
          "{} already holds another split (manifest.json{}; this one is {}): choose another "
          "--out, or remove that folder first",
          a.out, old_hash.empty() ? ", unreadable" : ", " + old_hash, m.hash));
  }
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", a.out, ec.message()));
  write_manifest(fs::path(a.out) / "manifest.json", m);
  nlohmann::json stats = {
      {"hash", m.hash}, {"assigned", st.assigned}, {"global_distribution", st.global_distribution}};
  if (st.held_out) stats["held_out"] = st.held_out;  // --holdout
  for (const auto& [name, s] : {std::pair{"size", st.size},
                                {"labels_present", st.labels_present},
                                {"entropy_bits", st.entropy_bits},
                                {"emd", st.emd},
                                {"kl", st.kl}})
    stats["summary"][name] = {
        {"min", s.min}, {"median", s.median}, {"max", s.max}, {"mean", s.mean}};
  // the label rows summarize the clients holding samples: an empty one has no distribution
  stats["summary"]["label_rows_over_clients"] = st.clients.size() - empty.size();
  for (const auto& c : st.clients) {
    const auto defined = [&](double x) { return c.size ? nlohmann::json(x) : nlohmann::json(); };
    stats["clients"].push_back({{"id", c.id},
                                {"size", c.size},
                                {"labels_present", c.labels_present},
                                {"entropy_bits", defined(c.entropy_bits)},
                                {"emd", defined(c.emd)},
                                {"kl", defined(c.kl)}});
  }
  std::ofstream(fs::path(a.out) / "stats.json") << stats.dump(2) << "\n";
  std::ofstream(fs::path(a.out) / "partition.svg") << partition_svg(
      m, fmt::format("{}: {} over {} clients", train.name, m.scheme, m.clients.size()));

  fmt::print("\n{} in {:.1f} ms; wrote {}/manifest.json, stats.json, partition.svg\n", split, ms,
             a.out);
  return 0;
}

}  // namespace

Action add_partition_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("partition",
                                 "split a training set among clients (IID or non-IID) "
                                 "and describe the split");
  auto a = std::make_shared<PartitionArgs>();
  cmd->add_option("--dataset", a->data.name, "mnist | synthetic | csv")->capture_default_str();
  cmd->add_option("--data-dir", a->data.data_dir, "folder holding mnist/");
  cmd->add_option("--csv-train", a->data.csv_train, "CSV file (features..., label[, user])");
  cmd->add_flag("--csv-user-column", a->data.csv_user_column, "the CSV's last column is a user id");
  cmd->add_option("--synthetic-alpha", a->data.alpha, "Synthetic(alpha, beta): alpha");
  cmd->add_option("--synthetic-beta", a->data.beta, "Synthetic(alpha, beta): beta");
  cmd->add_flag("--synthetic-iid", a->data.iid, "the IID variant of Synthetic");
  cmd->add_option(
         "--scheme", a->params.scheme,
         "iid | iid-quantity | shards | labels-k | dirichlet-clients | dirichlet-classes | "
         "feature-noise | natural")
      ->capture_default_str();
  cmd->add_option("--clients", a->params.clients, "number of clients (natural: 0 = one per user)")
      ->capture_default_str();
  cmd->add_option("--seed", a->params.seed, "partition seed")->capture_default_str();
  cmd->add_option("--shards-per-client", a->params.shards_per_client, "shards")
      ->capture_default_str();
  cmd->add_option("--labels-per-client,-k", a->params.labels_per_client, "labels-k")
      ->capture_default_str();
  cmd->add_option("--alpha", a->params.alpha,
                  "dirichlet-clients: each client's labels ~ Dir(alpha p), p the global label "
                  "distribution (Hsu et al.): the total concentration, about alpha / L per label "
                  "(MNIST: --alpha 0.1 is 0.01 per label)")
      ->capture_default_str();
  cmd->add_option("--beta", a->params.beta,
                  "dirichlet-classes: each label's split over clients ~ Dir(beta, ..., beta) "
                  "(NIID-Bench, and most papers' 'Dir(beta)'); iid-quantity: the sizes' "
                  "concentration")
      ->capture_default_str();
  cmd->add_option("--sizes", a->params.sizes, "iid-quantity: dirichlet | lognormal")
      ->capture_default_str();
  cmd->add_option("--sigma", a->params.sigma, "iid-quantity lognormal / feature-noise level")
      ->capture_default_str();
  cmd->add_option("--min-size", a->params.min_size, "samples per client at least")
      ->capture_default_str();
  cmd->add_option("--holdout", a->params.holdout,
                  "every scheme: the share of each client's samples held out of its training "
                  "(the table's sizes are what each trains on)")
      ->capture_default_str();
  cmd->add_option("--out", a->out,
                  "folder for manifest.json, stats.json, partition.svg (none: the table only)");
  cmd->add_option("--rows", a->rows, "per-client rows to print")->capture_default_str();
  cmd->add_option("--config", a->config,
                  "a run config: split its data (train_limit too) as its run would")
      ->check(existing_config_file());
  cmd->add_option("--set", a->sets,
                  "with or without --config, a run key: --set data.train_limit=12000");
  return [a, cmd] {
    if (!a->config.empty() || !a->sets.empty()) {  // the run's own split, its seed and limits
      for (const CLI::Option* o : cmd->get_options())
        if (o->count() > 0 && o->get_name() != "--config" && o->get_name() != "--set" &&
            o->get_name() != "--out" && o->get_name() != "--rows" && o->get_name() != "--help")
          throw Error(fmt::format(
              "{} with --config or --set: give it as --set KEY=VALUE (fedpar keys run lists "
              "them), so the split is the run's",
              o->get_name()));
      Config cfg = make_run_config();
      if (!a->config.empty()) cfg.merge_file(a->config);
      cfg.set_all(a->sets);
      const RunSpec s = resolve_run_spec_counting_users(cfg);
      for (const UnreadSetting& u : unread_settings(cfg, s))  // as the run would warn of them
        if (u.key.starts_with("partition.") || u.key.starts_with("data."))
          fmt::print(stderr, "fedpar partition: warning: the split does not read {} = {}: {}\n",
                     u.key, u.value, u.why);
      a->data = s.data;
      a->params = s.partition;
      return run_partition(*a, /*through_config=*/true);
    }
    a->data.seed = a->params.seed;
    // a parameter the scheme does not read would split otherwise than the line seems to ask
    std::vector<std::string> read_flags;
    for (const std::string& k : partition_scheme_keys(a->params)) read_flags.push_back(flag_of(k));
    for (const std::string& key : partition_parameter_keys())
      if (cmd->count(flag_of(key)) > 0 && !scheme_reads(a->params, key))
        fmt::print(stderr,
                   "fedpar partition: warning: --scheme {} does not read {} (it reads {})\n",
                   a->params.scheme, flag_of(key),
                   read_flags.empty() ? "no parameter of its own"
                                      : fmt::format("{}", fmt::join(read_flags, ", ")));
    return run_partition(*a);
  };
}

}  // namespace fedpar
