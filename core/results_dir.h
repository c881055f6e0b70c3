// A results folder that is either complete or absent: files are written into a hidden partial
// folder which commit() renames to results/<name> (adding -2, -3... rather than overwriting).
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace fedpar {

class ResultsDir {
 public:
  ResultsDir(const std::filesystem::path& parent, const std::string& name);
  ~ResultsDir();  // removes the partial folder unless committed; never throws
  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;

  const std::filesystem::path& path() const { return partial_; }
  void write_text(const std::string& file, const std::string& text) const;
  void write_json(const std::string& file, const nlohmann::json& j) const;
  // Renames the partial folder to its final name and returns that.
  std::filesystem::path commit();

 private:
  std::filesystem::path parent_, partial_;
  std::string name_;
  bool committed_ = false;
};

// Appends one JSON object per line, flushed, so a long run can be watched with `tail -f`.
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::filesystem::path& path);
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
};

}  // namespace fedpar
