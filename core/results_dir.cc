// ResultsDir and JsonlWriter; see results_dir.h.
#include "core/results_dir.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace fedpar {

namespace fs = std::filesystem;

ResultsDir::ResultsDir(const fs::path& parent, const std::string& name)
    : parent_(parent), name_(name) {
  std::error_code ec;
  fs::create_directories(parent_, ec);
  if (ec)
    throw Error(fmt::format("cannot create results folder {}: {}", parent_.string(), ec.message()));
  sweep_stale_partials();
  // Made under a name no sweep reads and locked there, then renamed: a sweep never sees the
  // folder without its lock held. A folder already under this pid's name (a live run on another
  // host, a dead one's checkpoint: pids repeat across hosts and container restarts) is left alone,
  // and this one takes the next free name.
  const fs::path making = parent_ / fmt::format(".{}.making-{}", name_, ::getpid());
  fs::remove_all(making, ec);
  fs::create_directory(making, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", making.string(), ec.message()));
  lock_ = FolderLock::try_lock(making);
  if (!lock_) throw Error(fmt::format("cannot lock {}/.lock", making.string()));
  for (int i = 1;; ++i) {
    partial_ = parent_ / fmt::format(".{}{}.partial-{}", name_, i == 1 ? "" : fmt::format("-{}", i),
                                     ::getpid());
    if (fs::exists(partial_)) continue;
    fs::rename(making, partial_, ec);
    if (!ec) break;
    if (i > 100) throw Error(fmt::format("cannot create {}: {}", partial_.string(), ec.message()));
  }
}

namespace {

// Whether the process that named a partial folder `pid` still writes it: its lock says, on any
// host; a folder without one (an older fedpar's) is judged by the pid, on this host only.
bool writer_alive(const fs::path& dir, pid_t pid) {
  if (const auto held = FolderLock::held(dir)) return *held;
  return pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH;
}

// Rounds a dead writer logged (a run's metrics.jsonl, a suite's finished runs): worth keeping.
bool holds_rounds(const fs::path& dir) {
  std::error_code ec;
  const auto size = fs::file_size(dir / "metrics.jsonl", ec);  // (uintmax_t)-1 on an error
  if (!ec && size > 0) return true;
  return fs::is_directory(dir / "runs", ec) && !fs::is_empty(dir / "runs", ec);
}

void repoint_nested_runs(const std::string& old_path, const std::string& new_path,
                         const fs::path& to);

// parent/name, or name-2, name-3, ... when taken.
fs::path free_name(const fs::path& parent, const std::string& name) {
  fs::path p = parent / name;
  for (int i = 2; fs::exists(p); ++i) p = parent / fmt::format("{}-{}", name, i);
  return p;
}

}  // namespace

void ResultsDir::sweep_stale_partials() {
  std::error_code ec;
  std::vector<std::pair<fs::path, pid_t>> dead;  // renamed after the listing, not during it
  for (const auto& e : fs::directory_iterator(parent_, ec)) {
    const std::string n = e.path().filename().string();
    const auto at = n.rfind(".partial-");
    if (!n.starts_with(".") || at == std::string::npos || at == 0) continue;
    const std::string digits = n.substr(at + 9);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const auto pid = pid_t(std::stol(digits));
    if (pid > 0 && !writer_alive(e.path(), pid)) dead.emplace_back(e.path(), pid);
  }
  for (const auto& [dir, pid] : dead) {
    if (fs::exists(dir / "checkpoint.bin")) {
      stale_checkpoints_.push_back(dir);  // a killed run to resume, not debris
    } else if (holds_rounds(dir)) {
      const std::string n = dir.filename().string();
      const std::string name = n.substr(1, n.rfind(".partial-") - 1);
      const fs::path to = free_name(parent_, name + ".incomplete");
      if (!fs::exists(dir / "README.md"))
        std::ofstream(dir / "README.md") << fmt::format(
            "# {} (died unfinished)\n\nThe process that wrote this folder (pid {}) ended "
            "without finishing it and without a word: killed (SIGKILL, out of memory) or "
            "its machine stopped. What it logged is here ({}); it wrote no checkpoint, so "
            "`--resume` cannot continue it (`checkpoint_every = N` writes them where a run can "
            "keep "
            "one). The next "
            "fedpar run in {} found it as {} and renamed it.\n",
            name, pid,
            fs::exists(dir / "metrics.jsonl") ? "metrics.jsonl: a line per round"
                                              : "runs/: the runs that finished",
            parent_.string(), n);
      fs::rename(dir, to, ec);
      if (ec) continue;  // another process took it first
      rescued_.emplace_back(dir, to);
      repoint_nested_runs(fs::absolute(dir, ec).string(), fs::absolute(to, ec).string(), to);
    } else {
      fs::remove_all(dir, ec);
    }
  }
}

ResultsDir::~ResultsDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(partial_, ec);
}

void ResultsDir::write_text(const std::string& file, const std::string& text) const {
  std::ofstream out(partial_ / file, std::ios::trunc);
  out << text;
  if (!out) throw Error(fmt::format("cannot write {}", (partial_ / file).string()));
}

void ResultsDir::write_json(const std::string& file, const nlohmann::ordered_json& j) const {
  write_text(file, j.dump(2) + "\n");
}

namespace {

// The runs a suite or the equivalence experiment made inside a partial folder name it in their
// config.resolved.toml (results_dir) and README.md ("run it again"): after the rename they must
// name the folder that exists.
void repoint_nested_runs(const std::string& old_path, const std::string& new_path,
                         const fs::path& to) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(to, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!it->is_regular_file() ||
        (file != "config.resolved.toml" && file != "README.md" && file != "report.md"))
      continue;
    std::ifstream in(it->path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bool changed = false;
    for (size_t at = text.find(old_path); at != std::string::npos;
         at = text.find(old_path, at + new_path.size())) {
      text.replace(at, old_path.size(), new_path);
      changed = true;
    }
    if (changed) std::ofstream(it->path(), std::ios::trunc) << text;
  }
}

}  // namespace

fs::path ResultsDir::commit(std::string_view suffix) {
  const fs::path final_path = free_name(parent_, name_ + std::string(suffix));
  std::error_code ec;
  fs::rename(partial_, final_path);
  committed_ = true;
  fs::remove(final_path / ".lock", ec);  // a finished folder has no writer to ask after
  lock_.reset();
  // the runs write absolute paths, or the one they were given
  repoint_nested_runs(fs::absolute(partial_, ec).string(), fs::absolute(final_path, ec).string(),
                      final_path);
  if (partial_.is_relative())
    repoint_nested_runs(partial_.string(), final_path.string(), final_path);
  return final_path;
}

JsonlWriter::JsonlWriter(const fs::path& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw Error(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
}

void JsonlWriter::write(const nlohmann::ordered_json& record) { write_line(record.dump()); }

void JsonlWriter::write_line(std::string_view line) {
  errno = 0;
  out_ << line << '\n';
  out_.flush();
  if (!out_)  // a full disk shows here, at the round it happens, not at the end of the run
    throw Error(fmt::format("cannot write {}: {}", path_.string(),
                            errno ? std::strerror(errno) : "the stream failed"));
}

std::string settings_section(const Config& cfg, const Config& defaults,
                             const std::map<std::string, std::string>& unread) {
  auto changed = cfg.changed_from(defaults);
  // Where the server listened changes nothing the run computes, and fedpar run and launch pick it
  // themselves: a reader would take it for a choice. config.resolved.toml still holds it.
  std::erase_if(changed, [](const auto& kv) { return kv.first == "bind"; });
  if (changed.empty()) return "## Settings\n\nEvery key at its default.\n\n";
  std::string md =
      "## Settings\n\nThe keys this run set to other values than the defaults (all of them are "
      "in `config.resolved.toml`):\n\n| key | value |\n|---|---|\n";
  for (const auto& [key, value] : changed) {
    const auto it = unread.find(key);
    md += fmt::format("| `{}` | `{}`{} |\n", key, value,
                      it == unread.end() ? "" : fmt::format(" (not read: {})", it->second));
  }
  return md + "\n";
}

}  // namespace fedpar
