// CSV dataset reader; see csv_dataset.h.
#include "core/csv_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <utility>

#include "core/check.h"

namespace fedpar {
namespace {

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    std::string_view f =
        line.substr(start, comma == std::string_view::npos ? comma : comma - start);
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t' || f.back() == '\r'))
      f.remove_suffix(1);
    out.push_back(f);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

bool parse_float(std::string_view s, float& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(v);
}

bool parse_int(std::string_view s, int32_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

constexpr int32_t kMaxClasses = 1 << 16;  // a label is a class: the model has one output each

// A header's column name as a spreadsheet or R writes it: quotes off, lower case.
std::string column_name(std::string_view f) {
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  std::string s(f);
  for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool names_user(const std::string& n) { return n == "user" || n == "user_id" || n == "userid"; }
bool names_label(const std::string& n) { return n == "label" || n == "target" || n == "class"; }

// A header is read by position (features..., label[, user]); one whose names put the label or
// the user elsewhere would have its columns silently swapped, so it is refused, saying how.
void check_header(const std::filesystem::path& path, size_t line_no,
                  const std::vector<std::string>& names, bool user_column) {
  const size_t label_at = names.size() - (user_column ? 2 : 1);
  if (!names.empty() && names[0].empty())
    throw Error(fmt::format(
        "{}:{}: the header's first column has no name, as pandas' to_csv writes its row index: "
        "that index would be read as a feature (write the file with index=False, or name the "
        "column)",
        path.string(), line_no));
  for (size_t j = 0; j < names.size(); ++j) {
    if (names_label(names[j]) && j != label_at)
      throw Error(fmt::format(
          "{}:{}: the header names column {} '{}', but the label is read from column {} (the "
          "columns are features..., label[, user]): move it there",
          path.string(), line_no, j + 1, names[j], label_at + 1));
    if (names_user(names[j]) && j + 1 != names.size())
      throw Error(fmt::format(
          "{}:{}: the header names column {} '{}', but a user id is read from the last column "
          "only: move it last (features..., label, user)",
          path.string(), line_no, j + 1, names[j]));
  }
}

}  // namespace

Dataset read_csv_dataset(const std::filesystem::path& path, bool user_column) {
  std::ifstream in(path);
  if (!in) {  // a relative path is read from where fedpar runs, not from the config's folder
    const int why = errno;  // before anything below can set it
    throw Error(fmt::format("cannot open CSV file {}: {}{}", path.string(), std::strerror(why),
                            path.is_relative()
                                ? fmt::format(" (a relative path is read from the "
                                              "current folder, {})",
                                              std::filesystem::current_path().string())
                                : ""));
  }
  Dataset d;
  d.name = "csv:" + path.filename().string();
  std::string line;
  size_t line_no = 0, width = 0, header_width = 0;
  int32_t max_label = -1;
  bool first = true;  // the first line that is not blank: the only one that may be a header
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 BOM
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split_commas(line);
    if (fields.size() == 1 && line.find(';') != std::string::npos)  // a European spreadsheet's
      throw Error(fmt::format("{}:{}: fields are separated by commas, and this line has ';'",
                              path.string(), line_no));
    // a header: the first line with no number in it (a first row starting with NA is a sample,
    // and an error naming its line)
    float probe = 0.0f;
    if (std::exchange(first, false) &&
        std::none_of(fields.begin(), fields.end(),
                     [&](std::string_view f) { return parse_float(f, probe); })) {
      std::vector<std::string> names;
      for (std::string_view f : fields) names.push_back(column_name(f));
      if (names_user(names.back())) user_column = true;
      check_header(path, line_no, names, user_column);
      header_width = names.size();
      continue;
    }
    const size_t tail = user_column ? 2 : 1;
    if (width == 0) {
      if (fields.size() <= tail)
        throw Error(fmt::format("{}:{}: need at least one feature column before label{}",
                                path.string(), line_no, user_column ? " and user" : ""));
      width = fields.size();
      d.shape = {1, 1, int(width - tail)};
      if (header_width && header_width != width)
        throw Error(fmt::format("{}:{}: {} columns, but the header names {}", path.string(),
                                line_no, width, header_width));
    }
    if (fields.size() != width)
      throw Error(fmt::format("{}:{}: {} columns, but the first row had {}", path.string(), line_no,
                              fields.size(), width));
    for (size_t j = 0; j + tail < width; ++j) {
      float v;
      if (!parse_float(fields[j], v))
        throw Error(fmt::format("{}:{}: column {} is not a finite number: '{}'", path.string(),
                                line_no, j + 1, fields[j]));
      d.x.push_back(v);
    }
    int32_t label, user = 0;
    if (!parse_int(fields[width - tail], label) || label < 0 || label >= kMaxClasses)
      throw Error(fmt::format("{}:{}: label must be an integer in 0..{}, got '{}'", path.string(),
                              line_no, kMaxClasses - 1, fields[width - tail]));
    if (user_column && (!parse_int(fields[width - 1], user) || user < 0))
      throw Error(fmt::format("{}:{}: user id must be an integer >= 0, got '{}'", path.string(),
                              line_no, fields[width - 1]));
    d.y.push_back(label);
    if (user_column) d.user.push_back(user);
    max_label = std::max(max_label, label);
  }
  if (d.size() == 0) throw Error(fmt::format("{}: no data rows", path.string()));
  d.num_classes = std::max(2, max_label + 1);
  return d;
}

}  // namespace fedpar
