// Which of a run config's settings the run reads. A setting changed from its default that the run
// never reads is a run other than the config seems to ask (partition.alpha beside
// dirichlet-classes, whose concentration is partition.beta): the run warns of it, its README marks
// it, and `fedpar compare` does not tell runs apart by it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/run_spec.h"

namespace fedpar {

// Why the run `s` (resolved from `c`) does not read `key`, "" when it does: [local] outside the
// model regime and [sgd] in it; local.steps beside local.epochs; the [optimizer] schedule's
// parameters but its own, and reference_batch without scaling; [network] but network.mode with the
// network off, and network.profile beside network.heterogeneous; a partition scheme's parameters
// but its own; [server_optimizer], [robust], [attack] and [compression] parameters their optimizer,
// rule, kind or codecs do not use; [pipeline], [async] and [allreduce] outside their topology or
// regime.
std::string why_unread(const Config& c, const RunSpec& s, std::string_view key);

inline bool run_reads(const Config& c, const RunSpec& s, std::string_view key) {
  return why_unread(c, s, key).empty();
}

// The settings `c` changes from the run defaults that `s` does not read: key, value and why.
struct UnreadSetting {
  std::string key, value, why;
};
std::vector<UnreadSetting> unread_settings(const Config& c, const RunSpec& s);

}  // namespace fedpar
