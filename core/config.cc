// Config; see config.h.
#include "core/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/spelling.h"

namespace fedpar {
namespace {

// Visits every leaf (value or array) of `t`, with its dotted key.
template <typename F>
void for_each_leaf(const toml::table& t, const std::string& prefix, F&& f) {
  for (const auto& [k, node] : t) {
    const std::string key =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const auto* sub = node.as_table())
      for_each_leaf(*sub, key, f);
    else
      f(key, node);
  }
}

std::string_view type_name(toml::node_type t) {
  switch (t) {
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "true or false";
    case toml::node_type::string:
      return "a string";
    default:
      return "a value";
  }
}

std::string list_type_name(toml::node_type element) {
  return element == toml::node_type::string ? "a list of strings" : "a list of integers";
}

// Splits "a.b.c" into a path toml++ can insert at.
std::vector<std::string> split_dots(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.emplace_back(key.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

// "x" or 'x' as TOML writes a string (--set 'data.name="mnist"', or ["1:0.5"] in a list): x.
std::string_view unquoted(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

Config::Config(std::string_view defaults_toml) {
  table_ = toml::parse(defaults_toml);
  for_each_leaf(table_, "", [&](const std::string& key, const toml::node& node) {
    keys_.push_back(key);
    types_[key] = node.type();
    // A list's element type comes from its default's first element; an empty default holds
    // integers.
    if (const auto* a = node.as_array())
      list_types_[key] = a->empty() ? toml::node_type::integer : (*a)[0].type();
  });
}

void Config::allow_words(const std::string& key, std::set<std::string> words) {
  FEDPAR_CHECK(types_.count(key)) << "no key " << key;
  words_[key] = std::move(words);
}

// The part after the last dot: "lr" of "optimizer.lr".
static std::string_view last_part(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

void Config::check_key(const std::string& key, std::string_view source) const {
  if (types_.count(key)) return;
  for (const auto& [others, hint] : elsewhere_)
    for (const std::string& other : others)
      if (key == other ||
          (key.starts_with(other) && key.size() > other.size() && key[other.size()] == '.'))
        throw Error(fmt::format("{}unknown config key '{}': {}", source, key, hint));
  // Near matches: a close spelling of the whole key, a key whose last part is (nearly) the one
  // given ("lr" -> optimizer.lr), or whose last part's words are all in the key given
  // ("server_optimizer.lr" -> local.server_lr), or, in the same table, a key whose last part has
  // the given one as a word ("network.latency" -> network.custom.latency_seconds); the closest
  // four, closest first.
  const auto words = [](std::string_view k) {
    std::set<std::string> w;
    for (size_t start = 0, end = 0; start <= k.size(); start = end + 1) {
      end = std::min(k.find_first_of("._", start), k.size());
      if (end > start) w.emplace(k.substr(start, end - start));
    }
    return w;
  };
  const std::set<std::string> given = words(key);
  const std::string table = key.substr(0, key.find('.') == std::string::npos ? 0 : key.find('.'));
  // a table no key is in, spelled close to one: the table is the slip, whatever its keys
  if (!table.empty() && std::none_of(keys_.begin(), keys_.end(), [&](const std::string& k) {
        return k.starts_with(table + ".");
      })) {
    std::set<std::string> tables, near_tables;
    for (const auto& k : keys_)
      if (k.find('.') != std::string::npos) tables.insert(k.substr(0, k.find('.')));
    for (const auto& t : tables)
      if (edit_distance(t, table) <= std::max<size_t>(1, table.size() / 4)) near_tables.insert(t);
    if (!near_tables.empty())
      throw Error(fmt::format("{}unknown config table [{}] (of key '{}'); did you mean [{}]?",
                              source, table, key, fmt::join(near_tables, "] or [")));
  }
  // other frameworks' names for what fedpar calls otherwise (Flower's num_rounds, ...)
  static const std::map<std::string, std::string> kSynonyms = {
      {"num_rounds", "rounds"}, {"learning_rate", "lr"},    {"local_epochs", "epochs"},
      {"num_epochs", "epochs"}, {"local_steps", "steps"},   {"num_clients", "clients"},
      {"batch_size", "batch"},  {"k", "labels_per_client"}, {"clients_per_round", "fraction"}};
  const auto synonym = kSynonyms.find(std::string(last_part(key)));
  // in the table given, else in any (train.learning_rate is optimizer.lr)
  const bool in_table = synonym != kSynonyms.end() && !table.empty() &&
                        std::any_of(keys_.begin(), keys_.end(), [&](const std::string& k) {
                          return k.starts_with(table + ".") && last_part(k) == synonym->second;
                        });
  std::vector<std::pair<size_t, std::string>> near;
  for (const auto& k : keys_) {
    if (synonym != kSynonyms.end() && last_part(k) == synonym->second &&
        (!in_table || k.starts_with(table + "."))) {
      near.emplace_back(0, k);
      continue;
    }
    const size_t whole = edit_distance(k, key);
    const size_t part = edit_distance(last_part(k), last_part(key));
    const std::set<std::string> mine = words(last_part(k));
    const bool rearranged =
        mine.size() > 1 && std::includes(given.begin(), given.end(), mine.begin(), mine.end());
    const bool a_word_of = !table.empty() && k.starts_with(table + ".") &&
                           last_part(key).size() > 3 && mine.count(std::string(last_part(key)));
    if (whole <= std::max<size_t>(2, key.size() / 5) ||
        part <= (last_part(key).size() > 3 ? 1u : 0u) || rearranged || a_word_of)
      near.emplace_back(rearranged ? 1 : a_word_of ? 2 : std::min(whole, part), k);
  }
  std::sort(near.begin(), near.end());
  if (near.size() > 4) near.resize(4);
  std::string guess;
  for (size_t i = 0; i < near.size(); ++i)
    guess += fmt::format("{}'{}'",
                         i == 0                 ? "; did you mean "
                         : i + 1 == near.size() ? " or "
                                                : ", ",
                         near[i].second);
  if (!guess.empty()) guess += "?";
  const std::string all = keys_command_.empty()
                              ? fmt::format("valid keys: {}", fmt::join(keys_, ", "))
                              : fmt::format("`{}` lists every key", keys_command_);
  throw Error(fmt::format("{}unknown config key '{}'{} ({})", source, key, guess, all));
}

std::string Config::where(std::string_view key) const {
  const auto it = origin_.find(std::string(key));
  if (it == origin_.end() || it->second == kFromFlag) return std::string(key);
  return fmt::format("{}: {}", it->second, key);
}

std::string Config::expected(const std::string& key) const {
  const toml::node_type want = types_.at(key);
  return want == toml::node_type::array ? list_type_name(list_types_.at(key))
                                        : std::string(type_name(want));
}

void Config::assign(const std::string& key, const toml::node& value, std::string_view source) {
  check_key(key, source);
  // merge_toml's source is "FILE: "; set()'s is empty
  origin_[key] =
      source.empty() ? std::string(kFromFlag) : std::string(source.substr(0, source.rfind(": ")));
  const toml::node_type want = types_.at(key);
  auto parts = split_dots(key);
  toml::table* t = &table_;
  for (size_t i = 0; i + 1 < parts.size(); ++i) t = (*t)[parts[i]].as_table();
  const std::string& leaf_name = parts.back();
  if (want == value.type()) {
    if (want == toml::node_type::array) {  // validate before changing anything
      for (const auto& e : *value.as_array())
        if (e.type() != list_types_.at(key))
          throw Error(fmt::format("{}config key '{}' must be {}", source, key, expected(key)));
    }
    value.visit([&](const auto& v) { t->insert_or_assign(leaf_name, v); });
    return;
  }
  if (want == toml::node_type::floating_point && value.is_integer()) {
    t->insert_or_assign(leaf_name, double(value.as_integer()->get()));
    return;
  }
  if (value.is_string() && words_.count(key) && words_.at(key).count(value.as_string()->get())) {
    t->insert_or_assign(leaf_name, value.as_string()->get());
    return;
  }
  std::string also;
  if (words_.count(key))
    also = fmt::format(" or one of \"{}\"", fmt::join(words_.at(key), "\", \""));
  throw Error(fmt::format("{}config key '{}' must be {}{}, got {}", source, key, expected(key),
                          also, shown(key, value)));
}

// What a file gave where another type was wanted: "the string \"5\" (write rounds = 5, without
// quotes)" for a number in quotes, else its TOML text ("5.5").
std::string Config::shown(const std::string& key, const toml::node& value) const {
  if (const auto* text = value.as_string()) {
    const std::string& v = text->get();
    const toml::node_type want = types_.at(key);
    bool numeric = false;
    if (want == toml::node_type::integer || want == toml::node_type::floating_point) try {
        numeric = toml::parse(fmt::format("x = {}", v))["x"].is_number();
      } catch (const toml::parse_error&) {
      }
    const bool boolean = want == toml::node_type::boolean && (v == "true" || v == "false");
    return fmt::format("the string \"{}\"{}", v,
                       numeric || boolean ? fmt::format(" (write {} = {}, without quotes)",
                                                        std::string(last_part(key)), v)
                                          : "");
  }
  std::ostringstream os;
  value.visit([&](const auto& v) { os << v; });
  return os.str();
}

namespace {

// `key = "word"`, not `key = word`, from line `line` (1-based) of `text` when it reads so; else
// the same with a key of the run config.
std::string quoted_example(std::string_view text, size_t line) {
  size_t start = 0;
  for (size_t l = 1; l < line && start != std::string_view::npos; ++l) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  const auto trim = [](std::string_view v) {
    const size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t\r");
    return a == std::string_view::npos ? std::string_view() : v.substr(a, b - a + 1);
  };
  if (start != std::string_view::npos) {
    std::string_view l = text.substr(start, text.find('\n', start) - start);
    l = l.substr(0, l.find('#'));
    const size_t eq = l.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view key = trim(l.substr(0, eq)), word = trim(l.substr(eq + 1));
      if (!key.empty() && !word.empty() && word.find_first_of(" \"'[{") == std::string_view::npos)
        return fmt::format("{} = \"{}\", not {} = {}", key, word, key, word);
    }
  }
  return "mode = \"simulated\", not mode = simulated";
}

}  // namespace

void Config::merge_toml(std::string_view text, std::string_view source_name) {
  toml::table user;
  try {
    user = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    // the parser's words for a bare word where a value goes: the likely slip is a string unquoted
    const bool bare = e.description().find("could not determine value type") != std::string::npos;
    throw Error(fmt::format("{}:{}:{}: {}{}", source_name, e.source().begin.line,
                            e.source().begin.column, e.description(),
                            bare ? fmt::format(" (a string needs quotes: {}; numbers, true/false "
                                               "and [lists] do not)",
                                               quoted_example(text, e.source().begin.line))
                                 : ""));
  }
  const std::string where = fmt::format("{}: ", source_name);
  for_each_leaf(user, "",
                [&](const std::string& key, const toml::node& node) { assign(key, node, where); });
}

void Config::merge_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot open config file {}", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  merge_toml(ss.str(), path.string());
}

void Config::set(std::string_view key_view, std::string_view quoted_value) {
  const std::string key(key_view);
  const std::string_view value = unquoted(quoted_value);
  check_key(key, "");
  const toml::node_type want = types_.at(key);
  auto fail = [&] {
    std::string also;
    if (words_.count(key))
      also = fmt::format(" or one of \"{}\"", fmt::join(words_.at(key), "\", \""));
    return Error(fmt::format("'{}={}': {} must be {}{}", key, value, key, expected(key), also));
  };
  auto parse_int = [&](std::string_view s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) throw fail();
    return v;
  };
  if (words_.count(key) && words_.at(key).count(std::string(value))) {
    assign(key, toml::value<std::string>(std::string(value)), "");
    return;
  }
  switch (want) {
    case toml::node_type::integer:
      assign(key, toml::value<int64_t>(parse_int(value)), "");
      return;
    case toml::node_type::floating_point: {
      double v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size()) throw fail();
      assign(key, toml::value<double>(v), "");
      return;
    }
    case toml::node_type::boolean:
      if (value == "true" || value == "1")
        assign(key, toml::value<bool>(true), "");
      else if (value == "false" || value == "0")
        assign(key, toml::value<bool>(false), "");
      else
        throw fail();
      return;
    case toml::node_type::array: {
      toml::array arr;
      std::string_view s = quoted_value;  // its items lose their quotes one by one
      if (s.starts_with('[') && s.ends_with(']')) s = s.substr(1, s.size() - 2);
      size_t start = 0;
      while (start < s.size()) {
        size_t comma = s.find(',', start);
        if (comma == std::string_view::npos) comma = s.size();
        std::string_view item = s.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) {
        } else if (list_types_.at(key) == toml::node_type::string) {
          arr.push_back(std::string(unquoted(item)));
        } else {
          arr.push_back(parse_int(item));
        }
        start = comma + 1;
      }
      assign(key, arr, "");
      return;
    }
    default:
      assign(key, toml::value<std::string>(std::string(value)), "");
  }
}

void Config::set_all(const std::vector<std::string>& assignments) {
  for (const auto& kv : assignments) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("--set '{}': expected key=value", kv));
    set(std::string_view(kv).substr(0, eq), std::string_view(kv).substr(eq + 1));
  }
}

const toml::node& Config::leaf(std::string_view key) const {
  const toml::node* n = table_.at_path(key).node();
  FEDPAR_CHECK(n) << "no config key " << key;
  return *n;
}

int64_t Config::get_int(std::string_view key) const {
  const auto* v = leaf(key).as_integer();
  FEDPAR_CHECK(v) << key << " is not an integer";
  return v->get();
}
int Config::get_int32(std::string_view key) const {
  const int64_t v = get_int(key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw Error(fmt::format("config key '{}' = {} is out of range: at most {}", key, v,
                            std::numeric_limits<int>::max()));
  return int(v);
}
double Config::get_float(std::string_view key) const {
  const auto& n = leaf(key);
  if (const auto* i = n.as_integer()) return double(i->get());
  FEDPAR_CHECK(n.as_floating_point()) << key << " is not a number";
  const double v = n.as_floating_point()->get();
  if (!std::isfinite(v))
    throw Error(fmt::format("config key '{}' must be a finite number, got {}", key, v));
  return v;
}
bool Config::get_bool(std::string_view key) const {
  const auto* v = leaf(key).as_boolean();
  FEDPAR_CHECK(v) << key << " is not a boolean";
  return v->get();
}
std::string Config::get_string(std::string_view key) const {
  const auto* v = leaf(key).as_string();
  FEDPAR_CHECK(v) << key << " is not a string";
  return v->get();
}
void Config::list_of_strings(const std::string& key) {
  FEDPAR_CHECK(list_types_.count(key)) << key << " is not a list";
  list_types_[key] = toml::node_type::string;
}

std::vector<int64_t> Config::get_int_list(std::string_view key) const {
  const auto* a = leaf(key).as_array();
  FEDPAR_CHECK(a) << key << " is not a list";
  std::vector<int64_t> out;
  for (const auto& e : *a) out.push_back(e.as_integer()->get());
  return out;
}
std::vector<std::string> Config::get_string_list(std::string_view key) const {
  const auto* a = leaf(key).as_array();
  FEDPAR_CHECK(a && list_types_.at(std::string(key)) == toml::node_type::string)
      << key << " is not a list of strings";
  std::vector<std::string> out;
  for (const auto& e : *a) out.push_back(e.as_string()->get());
  return out;
}
bool Config::is_word(std::string_view key, std::string_view word) const {
  const auto* v = leaf(key).as_string();
  return v && v->get() == word;
}

std::vector<std::pair<std::string, std::string>> Config::changed_from(
    const Config& defaults) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& key : keys_) {
    std::string value = value_text(key);
    if (!defaults.types_.count(key) || value != defaults.value_text(key))
      out.emplace_back(key, std::move(value));
  }
  return out;
}

std::string Config::value_text(std::string_view key) const {
  const toml::node& n = leaf(key);
  if (const auto* d = n.as_floating_point()) return fmt::format("{}", d->get());  // shortest
  std::ostringstream os;
  n.visit([&](const auto& v) { os << v; });
  return os.str();
}

// toml++ writes a double with 17 digits (0.1 as 0.10000000000000001); a float outside a string is
// rewritten in its shortest form that reads back to the same double (0.1), as value_text does.
static std::string shortest_floats(const std::string& text) {
  std::string out;
  char quote = 0;  // inside a '...' or "..." string
  for (size_t i = 0; i < text.size();) {
    const char ch = text[i];
    if (quote) {
      out += ch, ++i;
      if (ch == '\\' && quote == '"' && i < text.size())
        out += text[i++];
      else if (ch == quote)
        quote = 0;
      continue;
    }
    if (ch == '\'' || ch == '"') quote = ch;
    const bool starts =
        (std::isdigit(uint8_t(ch)) || ch == '-') && (i == 0 || std::strchr(" [,=", text[i - 1]));
    if (!starts) {
      out += ch, ++i;
      continue;
    }
    const size_t end = text.find_first_of(" ,]\n", i);
    const std::string token = text.substr(i, end - i);
    char* stop = nullptr;
    const double v = std::strtod(token.c_str(), &stop);
    const bool is_float = token.find_first_of(".eE") != std::string::npos &&
                          token.find_first_of("xob:") == std::string::npos && *stop == '\0';
    std::string shortest = is_float ? fmt::format("{}", v) : token;
    if (is_float && shortest.find_first_of(".eEn") == std::string::npos) shortest += ".0";
    out += shortest;
    i = end == std::string::npos ? text.size() : end;
  }
  return out;
}

std::string Config::to_toml() const {
  std::ostringstream os;
  os << table_ << "\n";
  return shortest_floats(os.str());
}

std::string Config::given_toml() const {
  toml::table t = table_;
  for (const std::string& key : keys_) {
    if (given(key)) continue;
    const auto parts = split_dots(key);
    toml::table* at = &t;
    for (size_t i = 0; i + 1 < parts.size(); ++i) at = (*at)[parts[i]].as_table();
    at->erase(parts.back());
  }
  // tables left without a given key go too ([local] with none of its keys given)
  std::function<void(toml::table&)> prune = [&](toml::table& table) {
    for (auto it = table.begin(); it != table.end();) {
      if (auto* sub = it->second.as_table()) {
        prune(*sub);
        if (sub->empty()) {
          it = table.erase(it);
          continue;
        }
      }
      ++it;
    }
  };
  prune(t);
  std::ostringstream os;
  os << t << "\n";
  return shortest_floats(os.str());
}

}  // namespace fedpar
