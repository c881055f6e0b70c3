// A results folder that is either complete or absent: files are written into a hidden partial
// folder which commit() renames to results/<name> (adding -2, -3... rather than overwriting).
// Partial folders whose writer died (SIGKILL, out of memory, power loss: none holds its lock) are
// dealt with when the next one is made in the same place: those holding a checkpoint are kept for
// --resume, those holding rounds (metrics.jsonl, a suite's runs) become NAME.incomplete with a
// README saying what happened, and the rest (debris of a start) are removed.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/folder_lock.h"

namespace fedpar {

// A results folder README's "## Settings" section: a table of the keys `cfg` sets to other values
// than `defaults` (its command's), so the folder says what the run chose; a key in `unread` (key:
// why) is marked as one the run did not read.
std::string settings_section(const Config& cfg, const Config& defaults,
                             const std::map<std::string, std::string>& unread = {});

class ResultsDir {
 public:
  ResultsDir(const std::filesystem::path& parent, const std::string& name);
  ~ResultsDir();  // removes the partial folder unless committed; never throws
  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;

  const std::filesystem::path& path() const { return partial_; }
  // Partial folders of dead processes that hold checkpoint.bin (fedpar run --resume continues
  // them).
  const std::vector<std::filesystem::path>& stale_checkpoints() const { return stale_checkpoints_; }
  // Partial folders of dead processes that held rounds but no checkpoint, renamed: from, to.
  const std::vector<std::pair<std::filesystem::path, std::filesystem::path>>& rescued() const {
    return rescued_;
  }
  void write_text(const std::string& file, const std::string& text) const;
  void write_json(const std::string& file, const nlohmann::ordered_json& j) const;
  // Renames the partial folder to its final name (with `suffix`: a kept failed run's) and
  // returns that.
  std::filesystem::path commit(std::string_view suffix = "");

 private:
  void sweep_stale_partials();
  std::filesystem::path parent_, partial_;
  std::string name_;
  bool committed_ = false;
  std::optional<FolderLock> lock_;  // held while this process writes partial_
  std::vector<std::filesystem::path> stale_checkpoints_;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> rescued_;
};

// Appends one JSON object per line, flushed, so a long run can be watched with `tail -f`.
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::filesystem::path& path);
  // Both throw Error naming the file and the cause (e.g. "No space left on device").
  void write(const nlohmann::ordered_json& record);
  void write_line(std::string_view line);  // a line already written once (a resumed run's)

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace fedpar
