// The partition schemes; see partition.h and docs/partitioning.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "core/check.h"
#include "core/feature_noise.h"
#include "core/rng.h"
#include "core/spelling.h"
#include "partitioners/partition.h"

namespace fedpar {
namespace {

using Clients = std::vector<std::vector<uint32_t>>;

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

std::vector<uint32_t> shuffled_range(size_t n, Rng& rng) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  rng.shuffle(std::span(v));
  return v;
}

// Splits `total` into `parts` sizes differing by at most one (remainders one by one from the
// front).
std::vector<size_t> equal_sizes(size_t total, size_t parts) {
  std::vector<size_t> s(parts, total / parts);
  for (size_t i = 0; i < total % parts; ++i) ++s[i];
  return s;
}

// Cuts `order` into consecutive pieces of `sizes`.
Clients cut(const std::vector<uint32_t>& order, const std::vector<size_t>& sizes) {
  Clients out(sizes.size());
  size_t at = 0;
  for (size_t c = 0; c < sizes.size(); ++c) {
    out[c].assign(order.begin() + long(at), order.begin() + long(at + sizes[c]));
    at += sizes[c];
  }
  return out;
}

// Sizes proportional to `weights`, each at least `min`, summing to `total` (largest remainders
// get the leftover samples; ties by client id).
std::vector<size_t> sizes_from_weights(const std::vector<double>& weights, size_t total,
                                       size_t min) {
  const size_t n = weights.size(), free = total - min * n;
  double sum = 0;
  for (double w : weights) sum += w;
  FEDPAR_CHECK(std::isfinite(sum) && sum > 0) << "client weights sum to " << sum;
  std::vector<size_t> s(n);
  std::vector<std::pair<double, size_t>> frac(n);
  size_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = double(free) * weights[i] / sum;
    s[i] = min + size_t(std::floor(exact));
    used += s[i];
    frac[i] = {-(exact - std::floor(exact)), i};
  }
  std::sort(frac.begin(), frac.end());
  for (size_t k = 0; used < total; ++k, ++used) ++s[frac[k % n].second];
  return s;
}

std::vector<std::vector<uint32_t>> by_label(const std::vector<int32_t>& labels, int classes) {
  std::vector<std::vector<uint32_t>> pools(static_cast<size_t>(classes));
  for (size_t i = 0; i < labels.size(); ++i) pools[size_t(labels[i])].push_back(uint32_t(i));
  return pools;
}

Clients iid(size_t n, const PartitionParams& p) {
  Rng rng(p.seed, "partition");
  return cut(shuffled_range(n, rng), equal_sizes(n, size_t(p.clients)));
}

Clients iid_quantity(size_t n, const PartitionParams& p) {
  const size_t N = size_t(p.clients);
  require(size_t(p.min_size) * N <= n,
          fmt::format("iid-quantity: {} clients x min_size {} exceeds the {} samples", N,
                      p.min_size, n));
  Rng rng(p.seed, "partition");
  std::vector<double> w(N);
  if (p.sizes == "dirichlet") {
    require(p.beta > 0, fmt::format("iid-quantity: beta must be > 0, got {}", p.beta));
    w = rng.dirichlet(std::vector<double>(N, p.beta));
  } else if (p.sizes == "lognormal") {
    // exp(sigma z) stays finite in double up to sigma 50 (|z| < 14); beyond, one client would
    // hold everything anyway
    require(p.sigma >= 0 && p.sigma <= 50,
            fmt::format("iid-quantity: sigma must be in [0, 50], got {}", p.sigma));
    for (double& v : w) v = std::exp(p.sigma * rng.normal());
  } else {
    throw Error(
        fmt::format("iid-quantity: sizes must be dirichlet or lognormal, got '{}'", p.sizes));
  }
  const auto order = shuffled_range(n, rng);
  return cut(order, sizes_from_weights(w, n, size_t(p.min_size)));
}

// McMahan et al. 2017: sort by label, cut S*N equal shards, give each client S random shards.
Clients shards(const std::vector<int32_t>& labels, const PartitionParams& p) {
  const size_t N = size_t(p.clients), S = size_t(p.shards_per_client);
  require(S >= 1, "shards: shards_per_client must be >= 1");
  require(S * N <= labels.size(),
          fmt::format("shards: {} clients x {} shards need at least {} samples, the dataset has {}",
                      N, S, S * N, labels.size()));
  std::vector<uint32_t> order(labels.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return labels[a] < labels[b]; });
  const Clients pieces = cut(order, equal_sizes(labels.size(), S * N));
  Rng rng(p.seed, "partition");
  const auto perm = shuffled_range(S * N, rng);
  Clients out(N);
  for (size_t c = 0; c < N; ++c)
    for (size_t s = 0; s < S; ++s) {
      const auto& piece = pieces[perm[c * S + s]];
      out[c].insert(out[c].end(), piece.begin(), piece.end());
    }
  return out;
}

// Client i holds the (i mod L)-th of the L labels with samples plus k-1 distinct random others of
// them; each label's samples are split equally among its holders.
Clients labels_k(const std::vector<int32_t>& labels, int classes, const PartitionParams& p) {
  const int k = p.labels_per_client, N = p.clients;
  // Only the labels with samples are dealt (a CSV's labels 1..3 make 4 classes, label 0 empty:
  // a client dealt it held one label fewer than k, without a word).
  auto pools = by_label(labels, classes);
  std::vector<int> present;
  for (int l = 0; l < classes; ++l)
    if (!pools[size_t(l)].empty()) present.push_back(l);
  const int P = int(present.size());
  require(k >= 1 && k <= P,
          fmt::format("labels-k: k must be between 1 and the number of labels with samples ({}{}), "
                      "got {}",
                      P, P < classes ? fmt::format(" of {}", classes) : "", k));
  std::vector<std::vector<int>> holders(static_cast<size_t>(classes));
  for (int c = 0; c < N; ++c) {
    Rng rng(p.seed, "partition", uint32_t(c) + 1);
    const int first = present[size_t(c % P)];
    std::vector<int> others;
    for (int l : present)
      if (l != first) others.push_back(l);
    rng.shuffle(std::span(others));
    holders[size_t(first)].push_back(c);
    for (int j = 0; j < k - 1; ++j) holders[size_t(others[size_t(j)])].push_back(c);
  }
  Rng rng(p.seed, "partition");
  Clients out(static_cast<size_t>(N));
  for (int l = 0; l < classes; ++l) {
    auto& pool = pools[size_t(l)];
    if (holders[size_t(l)].empty()) continue;  // nobody holds this label: its samples stay out
    rng.shuffle(std::span(pool));
    const Clients pieces = cut(pool, equal_sizes(pool.size(), holders[size_t(l)].size()));
    for (size_t h = 0; h < pieces.size(); ++h) {
      auto& dst = out[size_t(holders[size_t(l)][h])];
      dst.insert(dst.end(), pieces[h].begin(), pieces[h].end());
    }
  }
  return out;
}

// Hsu et al. 2019: client label distribution q ~ Dir(alpha * p_global); equal client sizes; each
// sample's label drawn from q among the labels with samples left.
Clients dirichlet_clients(const std::vector<int32_t>& labels, int classes,
                          const PartitionParams& p) {
  require(p.alpha > 0, fmt::format("dirichlet-clients: alpha must be > 0, got {}", p.alpha));
  auto pools = by_label(labels, classes);
  Rng rng(p.seed, "partition");
  for (auto& pool : pools) rng.shuffle(std::span(pool));
  std::vector<double> prior(static_cast<size_t>(classes));
  for (int l = 0; l < classes; ++l)
    prior[size_t(l)] = p.alpha * double(pools[size_t(l)].size()) / double(labels.size());
  for (double& a : prior) a = std::max(a, 1e-300);  // absent labels: never drawn
  const auto sizes = equal_sizes(labels.size(), size_t(p.clients));
  Clients out(static_cast<size_t>(p.clients));
  std::vector<size_t> next(size_t(classes), 0);
  for (size_t c = 0; c < out.size(); ++c) {
    Rng crng(p.seed, "partition", uint32_t(c) + 1);
    const std::vector<double> q = crng.dirichlet(prior);
    for (size_t s = 0; s < sizes[c]; ++s) {
      double total = 0;
      for (int l = 0; l < classes; ++l)
        if (next[size_t(l)] < pools[size_t(l)].size()) total += q[size_t(l)];
      int pick = -1;
      if (total > 0) {
        double u = crng.uniform_double() * total;
        for (int l = 0; l < classes && pick < 0; ++l)
          if (next[size_t(l)] < pools[size_t(l)].size() && (u -= q[size_t(l)]) < 0) pick = l;
      }
      if (pick < 0)  // q has no mass left on the remaining labels: take the fullest pool
        for (int l = 0; l < classes; ++l)
          if (next[size_t(l)] < pools[size_t(l)].size() &&
              (pick < 0 || pools[size_t(l)].size() - next[size_t(l)] >
                               pools[size_t(pick)].size() - next[size_t(pick)]))
            pick = l;
      out[c].push_back(pools[size_t(pick)][next[size_t(pick)]++]);
    }
  }
  return out;
}

// NIID-Bench (Li et al. 2022): per class, proportions over clients ~ Dir(beta); clients already
// holding n/N samples get none of the class (balancing); retry while some client has fewer than
// min_size samples. Bounded: after 100 draws the smallest clients are topped up from the largest,
// which `note` says (their labels are then the largest clients', not the draw's).
Clients dirichlet_classes(const std::vector<int32_t>& labels, int classes, const PartitionParams& p,
                          std::string& note) {
  const size_t n = labels.size(), N = size_t(p.clients);
  require(p.beta > 0, fmt::format("dirichlet-classes: beta must be > 0, got {}", p.beta));
  require(size_t(p.min_size) * N <= n,
          fmt::format("dirichlet-classes: {} clients x min_size {} exceeds the {} samples", N,
                      p.min_size, n));
  auto pools = by_label(labels, classes);
  Clients out;
  for (uint32_t attempt = 0; attempt < 100; ++attempt) {
    Rng rng(p.seed, "partition", 0, attempt);
    out.assign(N, {});
    for (auto pool : pools) {
      rng.shuffle(std::span(pool));
      std::vector<double> q = rng.dirichlet(std::vector<double>(N, p.beta));
      double sum = 0;
      for (size_t c = 0; c < N; ++c) sum += (q[c] *= out[c].size() < n / N ? 1.0 : 0.0);
      if (sum <= 0) {
        // All the draw's mass is on full clients (at a tiny beta the others' shares underflow to
        // 0): the balanced draw is Dir(beta) over the clients not full, as a Dirichlet's part,
        // renormalized, is one. (It was one class spread evenly over every client: near-IID
        // where beta asks for the most skew.)
        std::vector<size_t> open;
        for (size_t c = 0; c < N; ++c)
          if (out[c].size() < n / N) open.push_back(c);
        q.assign(N, open.empty() ? 1.0 : 0.0);  // every client full: the remainder evenly
        if (!open.empty()) {
          const auto d = rng.dirichlet(std::vector<double>(open.size(), p.beta));
          for (size_t i = 0; i < open.size(); ++i) q[open[i]] = d[i];
        }
        sum = std::accumulate(q.begin(), q.end(), 0.0);
      }
      size_t at = 0;
      double cum = 0;
      for (size_t c = 0; c < N; ++c) {
        cum += q[c] / sum;
        const size_t end =
            c + 1 == N ? pool.size() : std::min(pool.size(), size_t(cum * double(pool.size())));
        out[c].insert(out[c].end(), pool.begin() + long(at),
                      pool.begin() + long(std::max(at, end)));
        at = std::max(at, end);
      }
    }
    size_t smallest = n;
    for (const auto& c : out) smallest = std::min(smallest, c.size());
    if (smallest >= size_t(p.min_size)) return out;
  }
  // Top-up: move samples from the currently largest client to each client below min_size.
  size_t topped = 0, moved = 0;
  for (size_t c = 0; c < N; ++c) {
    topped += out[c].size() < size_t(p.min_size);
    while (out[c].size() < size_t(p.min_size)) {
      size_t big = 0;
      for (size_t d = 1; d < N; ++d)
        if (out[d].size() > out[big].size()) big = d;
      out[c].push_back(out[big].back());
      out[big].pop_back();
      ++moved;
    }
  }
  note = fmt::format(
      "dirichlet-classes: none of 100 draws gave every client min_size = {} samples, so {} of {} "
      "clients were topped up with {} samples from the largest: their labels are those clients', "
      "not the draw's, and the split is less skewed than beta = {:g} draws (lower min_size, or "
      "raise beta or the samples per client, for the skew asked)",
      p.min_size, topped, N, moved, p.beta);
  return out;
}

Clients natural(const std::vector<int32_t>& users, const PartitionParams& p) {
  require(!users.empty(),
          "natural: this dataset has no user ids (use synthetic, or a CSV with a "
          "user column)");
  std::map<int32_t, std::vector<uint32_t>> by_user;
  for (size_t i = 0; i < users.size(); ++i) by_user[users[i]].push_back(uint32_t(i));
  require(p.clients == 0 || size_t(p.clients) == by_user.size(),
          fmt::format("natural: the dataset has {} users, so clients must be {} (or 0), not {}",
                      by_user.size(), by_user.size(), p.clients));
  Clients out;
  for (auto& [user, idx] : by_user) out.push_back(std::move(idx));
  return out;
}

// The manifest's params: clients and what the scheme reads (core/partition_params.h).
nlohmann::json params_json(const PartitionParams& p, size_t clients) {
  nlohmann::json j = {{"clients", clients}};
  for (const std::string& k : partition_scheme_keys(p)) {
    if (k == "shards_per_client") j[k] = p.shards_per_client;
    if (k == "labels_per_client") j[k] = p.labels_per_client;
    if (k == "alpha") j[k] = p.alpha;
    if (k == "beta") j[k] = p.beta;
    if (k == "min_size") j[k] = p.min_size;
    if (k == "sizes") j[k] = p.sizes;
    if (k == "sigma") j[k] = p.sigma;
  }
  if (p.holdout > 0) j["holdout"] = p.holdout;  // absent at 0: earlier manifests keep their hash
  return j;
}

// partition.holdout: a uniform share of each client's samples, round(holdout x n) but at least
// one and never all, from stream (seed, "holdout", client), moves to its held-out set.
void hold_out(std::vector<uint32_t>& own, std::vector<uint32_t>& held, uint32_t client,
              const PartitionParams& p) {
  require(own.size() >= 2,
          fmt::format("partition.holdout = {} needs two samples per client (one to train on, one "
                      "to hold out), but client {} has {}: lower partition.clients or choose a "
                      "scheme that gives every client more",
                      p.holdout, client, own.size()));
  const size_t k =
      std::clamp<size_t>(size_t(std::lround(p.holdout * double(own.size()))), 1, own.size() - 1);
  Rng rng(p.seed, "holdout", client);
  rng.choose(std::span(own), k);
  held.assign(own.begin(), own.begin() + long(k));
  own.erase(own.begin(), own.begin() + long(k));
}

}  // namespace

Manifest partition(const PartitionInput& in, const PartitionParams& p) {
  const size_t n = in.labels.size();
  const auto schemes = partition_schemes();
  require(std::find(schemes.begin(), schemes.end(), p.scheme) != schemes.end(),
          fmt::format("unknown partition scheme '{}'{} (partition.scheme, or fedpar partition "
                      "--scheme; valid schemes: {})",
                      p.scheme, did_you_mean(p.scheme, schemes), fmt::join(schemes, ", ")));
  if (p.scheme != "natural") {
    require(p.clients >= 1, fmt::format("clients must be >= 1, got {}", p.clients));
    require(size_t(p.clients) <= n, fmt::format("{} clients but only {} samples: every client "
                                                "needs at least one",
                                                p.clients, n));
  }
  check_holdout(p.holdout);
  if (scheme_reads(p, "min_size"))
    require(p.min_size >= 0, fmt::format("{}: partition.min_size is the fewest samples a client "
                                         "gets, >= 0, got {}",
                                         p.scheme, p.min_size));
  Clients clients;
  std::string note;
  const std::string& s = p.scheme;
  if (s == "iid" || s == "feature-noise")
    clients = iid(n, p);
  else if (s == "iid-quantity")
    clients = iid_quantity(n, p);
  else if (s == "shards")
    clients = shards(in.labels, p);
  else if (s == "labels-k")
    clients = labels_k(in.labels, in.num_classes, p);
  else if (s == "dirichlet-clients")
    clients = dirichlet_clients(in.labels, in.num_classes, p);
  else if (s == "dirichlet-classes")
    clients = dirichlet_classes(in.labels, in.num_classes, p, note);
  else
    clients = natural(in.users, p);
  if (s == "feature-noise") require(p.sigma >= 0, "feature-noise: sigma must be >= 0");

  Manifest m;
  m.scheme = s;
  m.params = params_json(p, clients.size());
  m.seed = p.seed;
  m.dataset_name = in.dataset_name;
  m.dataset_hash = in.dataset_hash;
  for (size_t c = 0; c < clients.size(); ++c) {
    ClientShard shard{.id = uint32_t(c), .indices = std::move(clients[c])};
    shard.noise = feature_noise_level(p, uint32_t(c), clients.size());
    if (p.holdout > 0) hold_out(shard.indices, shard.held_out, shard.id, p);
    m.clients.push_back(std::move(shard));
  }
  m.finalize(in.labels, in.num_classes);
  if (!note.empty()) m.notes.push_back(note);
  return m;
}

}  // namespace fedpar
