// "client 3", "clients 0, 5", "clients 0, 1, ..., 7, ...": a log line's or README's list of client
// ids (or of rounds), the first kShownClients of them, so that a wide federation's line stays one
// line.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace fedpar {

inline constexpr size_t kShownClients = 8;

// "0, 5", "0, 1, ..., 7, ...": any range of integer ids, in the order to print
template <class Ids>
std::string id_list(const Ids& ids) {
  const size_t n = size_t(std::distance(std::begin(ids), std::end(ids)));
  auto last = std::begin(ids);
  std::advance(last, std::min(n, kShownClients));
  return fmt::format("{}{}", fmt::join(std::vector<int64_t>(std::begin(ids), last), ", "),
                     n > kShownClients ? ", ..." : "");
}

template <class Ids>  // any range of client ids, in the order to print
std::string client_list(const Ids& ids) {
  const size_t n = size_t(std::distance(std::begin(ids), std::end(ids)));
  return fmt::format("client{} {}", n > 1 ? "s" : "", id_list(ids));
}

}  // namespace fedpar
