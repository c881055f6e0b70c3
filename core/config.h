// Config: a TOML table whose keys and types are fixed by a defaults document. Files and
// `key=value` overrides are merged over the defaults; an unknown key or a wrong type is an Error
// that names the valid keys. The merged table is the "resolved config" written beside results.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fedpar {

class Config {
 public:
  // `defaults_toml` is trusted (compiled in); every leaf in it is a valid key.
  explicit Config(std::string_view defaults_toml);

  // Lets an integer key also take one of `words` as a string (e.g. batch = "full").
  void allow_words(const std::string& key, std::set<std::string> words);

  // Declares that `key`, whose default is an empty list, holds strings (else integers).
  void list_of_strings(const std::string& key);

  void merge_file(const std::filesystem::path& path);
  void merge_toml(std::string_view text, std::string_view source_name);
  // `key` is dotted ("train.epochs"); `value` is parsed by the key's type. Lists: "200,200" or
  // "logreg,2nn" (a list's element type is that of its default's elements; integers when empty).
  void set(std::string_view key, std::string_view value);
  // Applies "key=value" overrides (the --set flags) in order; an item without '=' is an Error.
  void set_all(const std::vector<std::string>& assignments);

  int64_t get_int(std::string_view key) const;
  int get_int32(std::string_view key) const;     // an Error naming the key beyond int's range
  double get_float(std::string_view key) const;  // an Error naming the key when not finite
  bool get_bool(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  std::vector<int64_t> get_int_list(std::string_view key) const;
  std::vector<std::string> get_string_list(std::string_view key) const;
  // True when the key currently holds one of its allowed words instead of an integer.
  bool is_word(std::string_view key, std::string_view word) const;

  // Where `key`'s value came from, for errors about its value: "run.toml: model.name" when a
  // file set it, else the key alone (a flag or --set, which the user just typed; the default).
  std::string where(std::string_view key) const;
  // Whether a file, a flag or --set gave `key` (false: it holds its default).
  bool given(std::string_view key) const { return origin_.count(std::string(key)) > 0; }
  // The command that lists every key (e.g. "fedpar keys run"): an unknown key's error names it
  // rather than listing them all.
  void describe_keys_with(std::string command) { keys_command_ = std::move(command); }
  // Keys (or tables: "train" covers train.*) of another command's configs: an unknown key among
  // them gets `hint` (which command the file is for) instead of spelling guesses. Each call adds
  // one command's.
  void refer_elsewhere(std::vector<std::string> keys, std::string hint) {
    elsewhere_.emplace_back(std::move(keys), std::move(hint));
  }

  std::string to_toml() const;
  // The keys a file, a flag or --set gave, as TOML: handed to another process of the same build
  // (whose defaults are these), it keeps given() as it was here.
  std::string given_toml() const;
  const std::vector<std::string>& keys() const { return keys_; }
  // Every key's value as TOML writes it ("0.1", "\"cnn\"", "[200, 200]"), for comparing runs.
  std::string value_text(std::string_view key) const;
  // (key, value_text) of the keys whose values differ from `defaults`' (or that it lacks), in
  // this config's order: what a run chose.
  std::vector<std::pair<std::string, std::string>> changed_from(const Config& defaults) const;

 private:
  const toml::node& leaf(std::string_view key) const;
  void check_key(const std::string& key, std::string_view source) const;
  void assign(const std::string& key, const toml::node& value, std::string_view source);
  std::string expected(const std::string& key) const;  // "an integer", "a list of strings", ...
  std::string shown(const std::string& key, const toml::node& value) const;

  toml::table table_;
  std::vector<std::string> keys_;
  std::map<std::string, toml::node_type> types_;
  std::map<std::string, toml::node_type> list_types_;  // element type of each list key
  std::map<std::string, std::set<std::string>> words_;
  static constexpr std::string_view kFromFlag = "--set";
  std::map<std::string, std::string> origin_;  // key -> the file that set it, or kFromFlag
  std::string keys_command_;
  std::vector<std::pair<std::vector<std::string>, std::string>> elsewhere_;  // keys, hint
};

}  // namespace fedpar
