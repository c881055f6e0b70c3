// Typed run records; see run_records.h. Each record's fields are listed once, in fields(), and
// visited by a Writer (to JSON) or a Reader (from JSON, strictly).
#include "core/run_records.h"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <set>

#include "core/check.h"

namespace fedpar {
namespace {

class Writer;
class Reader;
template <typename V>
void fields(V& v, ProcessRecord& r);
template <typename V>
void fields(V& v, ClientRecord& r);
template <typename V>
void fields(V& v, WorkerRecord& r);
template <typename V>
void fields(V& v, HostRecord& r);
template <typename V>
void fields(V& v, RoundRecord& r);
template <typename V>
void fields(V& v, RunSummary& r);

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};
template <typename T>
constexpr bool is_record = !std::is_arithmetic_v<T> && !std::is_same_v<T, std::string>;

class Writer {
 public:
  template <typename T>
  void operator()(const char* key, const T& v) {
    out[key] = encode(v);
  }
  template <typename T>
  void operator()(const char* key, const std::optional<T>& v) {
    if (v) out[key] = encode(*v);
  }
  // ordered: a line reads in the fields' order (round first), not alphabetically
  nlohmann::ordered_json out = nlohmann::ordered_json::object();

 private:
  template <typename T>
  static nlohmann::ordered_json encode(const T& v) {
    if constexpr (is_vector<T>::value) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& e : v) a.push_back(encode(e));
      return a;
    } else if constexpr (is_record<T>) {
      Writer w;
      fields(w, const_cast<T&>(v));
      return w.out;
    } else {
      return v;
    }
  }
};

class Reader {
 public:
  Reader(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail("", "is not a JSON object");
  }
  template <typename T>
  void operator()(const char* key, T& v) {
    if (!j_.contains(key)) fail(key, "is missing");
    v = decode<T>(j_.at(key), key);
    seen_.insert(key);
  }
  template <typename T>
  void operator()(const char* key, std::optional<T>& v) {
    if (!j_.contains(key)) return v.reset();
    v = decode<T>(j_.at(key), key);
    seen_.insert(key);
  }
  // Every key must have been read: an unknown one is a renamed or misspelt field.
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!seen_.count(key)) fail(key, fmt::format("is not a field of schema {}", kResultsSchema));
  }

 private:
  template <typename T>
  T decode(const nlohmann::json& e, const std::string& key) const {
    if constexpr (is_vector<T>::value) {
      if (!e.is_array()) fail(key, "is not a list");
      T out;
      for (size_t i = 0; i < e.size(); ++i)
        out.push_back(decode<typename T::value_type>(e[i], fmt::format("{}[{}]", key, i)));
      return out;
    } else if constexpr (is_record<T>) {
      T out;
      Reader r(e, where_ + ", " + key);
      fields(r, out);
      r.finish();
      return out;
    } else if (std::is_floating_point_v<T> && e.is_null()) {
      return std::numeric_limits<T>::quiet_NaN();  // JSON has no NaN or Inf: they are written null
    } else {
      const bool ok = std::is_same_v<T, bool>          ? e.is_boolean()
                      : std::is_same_v<T, std::string> ? e.is_string()
                      : std::is_floating_point_v<T>    ? e.is_number()
                      : std::is_unsigned_v<T>          ? e.is_number_unsigned()
                                                       : e.is_number_integer();
      if (!ok) fail(key, fmt::format("has the wrong type ({})", e.type_name()));
      return e.get<T>();
    }
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(fmt::format("{}: {}{}", where_,
                            key.empty() ? "the record" : fmt::format("key '{}'", key), " " + what));
  }

  const nlohmann::json& j_;
  std::string where_;
  std::set<std::string> seen_;
};

// Every key a record may hold, nested ones as "clients[].bytes_up" (a list of records) or
// "final.round" (a record).
class KeyLister {
 public:
  explicit KeyLister(std::string prefix = "") : prefix_(std::move(prefix)) {}
  template <typename T>
  void operator()(const char* key, T&) {
    add<T>(key);
  }
  template <typename T>
  void operator()(const char* key, std::optional<T>&) {
    add<T>(key);
  }
  std::vector<std::string> keys;

 private:
  template <typename T>
  void add(const char* key) {
    const std::string name = prefix_ + key;
    keys.push_back(name);
    if constexpr (is_vector<T>::value) {
      if constexpr (is_record<typename T::value_type>) nest<typename T::value_type>(name + "[].");
    } else if constexpr (is_record<T>) {
      nest<T>(name + ".");
    }
  }
  template <typename R>
  void nest(const std::string& prefix) {
    KeyLister inner(prefix);
    R r;
    fields(inner, r);
    keys.insert(keys.end(), inner.keys.begin(), inner.keys.end());
  }
  std::string prefix_;
};

template <typename V>
void fields(V& v, ProcessRecord& r) {
  v("process", r.process), v("tasks", r.tasks), v("bytes_down", r.bytes_down),
      v("bytes_up", r.bytes_up), v("lost", r.lost), v("peak_rss_mib", r.peak_rss_mib);
}

template <typename V>
void fields(V& v, ClientRecord& r) {
  v("client", r.client), v("process", r.process), v("bytes_up", r.bytes_up),
      v("compute_seconds", r.compute_seconds);
  v("samples_processed", r.samples_processed), v("parameter_bytes", r.parameter_bytes);
  v("activation_bytes", r.activation_bytes), v("loss", r.loss), v("update_norm", r.update_norm);
  v("weight", r.weight);
}

template <typename V>
void fields(V& v, WorkerRecord& r) {
  v("process", r.process), v("compute_seconds", r.compute_seconds),
      v("allreduce_seconds", r.allreduce_seconds);
  v("ring_bytes_sent", r.ring_bytes_sent), v("ring_bytes_received", r.ring_bytes_received);
  v("parameter_bytes", r.parameter_bytes), v("activation_bytes", r.activation_bytes),
      v("bytes_up", r.bytes_up);
  v("replica_seconds", r.replica_seconds), v("replica_bytes_sent", r.replica_bytes_sent);
  v("replica_bytes_received", r.replica_bytes_received);
}

template <typename V>
void fields(V& v, HostRecord& r) {
  v("slots", r.slots), v("clients", r.clients), v("lost", r.lost);
  v("joined_after_round", r.joined_after_round), v("device", r.device), v("pid", r.pid);
  v("build", r.build), v("machine", r.machine);
  v("replaced_after_round", r.replaced_after_round);
}

template <typename V>
void fields(V& v, RoundRecord& r) {
  v("round", r.round), v("topology", r.topology), v("train_loss", r.train_loss), v("lr", r.lr),
      v("wait_seconds", r.wait_seconds);
  v("bytes_sent_total", r.bytes_sent_total), v("bytes_received_total", r.bytes_received_total);
  v("server_bytes_sent", r.server_bytes_sent), v("server_bytes_received", r.server_bytes_received);
  v("processes", r.processes), v("test_loss", r.test_loss), v("test_accuracy", r.test_accuracy);
  v("global_train_loss", r.global_train_loss), v("global_train_accuracy", r.global_train_accuracy);
  v("client_accuracy", r.client_accuracy), v("client_loss", r.client_loss);
  v("participants", r.participants), v("received", r.received),
      v("aggregate_seconds", r.aggregate_seconds);
  v("samples_processed", r.samples_processed), v("missing", r.missing),
      v("bytes_down_per_task", r.bytes_down_per_task);
  v("clients", r.clients), v("mean_pairwise_cosine", r.mean_pairwise_cosine);
  v("gradient_diversity", r.gradient_diversity), v("broadcast_seconds", r.broadcast_seconds);
  v("update_drift", r.update_drift), v("diagnostic_bytes_up", r.diagnostic_bytes_up),
      v("model_sent_up", r.model_sent_up), v("batch", r.batch);
  v("worker_forward_seconds", r.worker_forward_seconds),
      v("worker_backward_seconds", r.worker_backward_seconds);
  v("master_loss_seconds", r.master_loss_seconds), v("workers", r.workers),
      v("replicas_checked", r.replicas_checked);
  v("updates_applied", r.updates_applied), v("updates_rejected", r.updates_rejected);
  v("model_version", r.model_version), v("staleness_max", r.staleness_max),
      v("staleness_mean", r.staleness_mean);
  v("elapsed_seconds", r.elapsed_seconds), v("tasks_resent", r.tasks_resent);
  v("unavailable", r.unavailable), v("simulated_lost", r.simulated_lost),
      v("simulated_late", r.simulated_late);
  v("not_waited_for", r.not_waited_for), v("available", r.available);
  v("clipped", r.clipped), v("clip_norm", r.clip_norm), v("epsilon", r.epsilon);
  v("robust_fallback", r.robust_fallback);
  v("simulated_seconds", r.simulated_seconds), v("simulated_time", r.simulated_time);
  v("emulated_seconds", r.emulated_seconds), v("emulated_time", r.emulated_time);
}

template <typename V>
void fields(V& v, RunSummary& r) {
  v("command", r.command), v("model_hash", r.model_hash), v("parameters", r.parameters),
      v("train_samples", r.train_samples), v("test_samples", r.test_samples);
  v("dataset", r.dataset), v("data_from", r.data_from), v("rounds_run", r.rounds_run),
      v("stopped_at_accuracy", r.stopped_at_accuracy);
  v("diverged_at_round", r.diverged_at_round), v("diverged", r.diverged);
  v("clients", r.clients), v("processes", r.processes), v("hosts", r.hosts);  // `final`: to_json
  v("replaced", r.replaced);
  v("server_peak_rss_mib", r.server_peak_rss_mib), v("source_commit", r.source_commit),
      v("build_vector_units", r.build_vector_units), v("blas_kernels", r.blas_kernels),
      v("machine", r.machine), v("load_average", r.load_average);
  v("rounds_seconds", r.rounds_seconds);
  v("resumed_after_round", r.resumed_after_round), v("earlier_commits", r.earlier_commits);
  v("resumed_with_changes", r.resumed_with_changes);
  v("init_hash", r.init_hash), v("client_holdout", r.client_holdout);
  v("warnings", r.warnings);
}

// A top-level record: its fields plus `schema` (and `kind` for lines of a log).
template <typename T>
nlohmann::ordered_json write_top(const T& record, const char* kind) {
  Writer w;
  fields(w, const_cast<T&>(record));
  w.out["schema"] = kResultsSchema;
  w.out["kind"] = kind;
  return w.out;
}

template <typename T>
T read_top(const nlohmann::json& j, const std::string& where, const char* kind) {
  T out;
  Reader r(j, where);
  int64_t schema = 0;
  std::string k;
  r("schema", schema);
  if (schema != kResultsSchema)
    throw Error(fmt::format("{}: schema {} (this fedpar reads schema {}; rerun the run with it)",
                            where, schema, kResultsSchema));
  r("kind", k);
  if (k != kind)
    throw Error(fmt::format("{}: a '{}' record where a '{}' was expected", where, k, kind));
  fields(r, out);
  r.finish();
  return out;
}

nlohmann::json parse_line(const std::string& text, const std::string& where) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(fmt::format("{}: not JSON", where));
  return j;
}

}  // namespace

std::vector<std::string> round_record_keys() {
  KeyLister l;
  RoundRecord r;
  fields(l, r);
  return l.keys;
}

std::vector<std::string> run_summary_keys() {
  KeyLister l;
  RunSummary r;
  fields(l, r);
  l.keys.push_back("final");  // written by to_json: the last evaluated round's record
  return l.keys;
}

nlohmann::ordered_json to_json(const RoundRecord& r) { return write_top(r, "round"); }
nlohmann::ordered_json to_json(const RunSummary& s) {
  auto j = write_top(s, "summary");
  if (s.final) j["final"] = to_json(*s.final);  // a whole round record, with its schema
  return j;
}

RoundRecord round_from_json(const nlohmann::json& j, const std::string& where) {
  return read_top<RoundRecord>(j, where, "round");
}

RunSummary summary_from_json(const nlohmann::json& j, const std::string& where) {
  nlohmann::json top = j;
  std::optional<RoundRecord> final;
  if (top.is_object() && top.contains("final")) {
    final = round_from_json(top["final"], where + ", final");
    top.erase("final");
  }
  RunSummary s = read_top<RunSummary>(top, where, "summary");
  s.final = std::move(final);
  return s;
}

std::vector<RoundRecord> read_round_records(const std::filesystem::path& run_dir) {
  const auto path = run_dir / "metrics.jsonl";
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("no metrics.jsonl in {}", run_dir.string()));
  std::vector<RoundRecord> rounds;
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string where = fmt::format("{} line {}", path.string(), ++n);
    rounds.push_back(round_from_json(parse_line(line, where), where));
  }
  return rounds;
}

RunSummary read_run_summary(const std::filesystem::path& run_dir) {
  const auto path = run_dir / "summary.json";
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("no summary.json in {}", run_dir.string()));
  const std::string text(std::istreambuf_iterator<char>(in), {});
  return summary_from_json(parse_line(text, path.string()), path.string());
}

}  // namespace fedpar
