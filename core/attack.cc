// Simulated attacks; see attack.h.
#include "core/attack.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/named_choices.h"
#include "core/rng.h"

namespace fedpar {

AttackKind parse_attack(const std::string& name) {
  static constexpr NamedChoice<AttackKind> kKinds[] = {{AttackKind::kNone, "none"},
                                                       {AttackKind::kSignFlip, "sign-flip"},
                                                       {AttackKind::kScale, "scale"},
                                                       {AttackKind::kNoise, "noise"},
                                                       {AttackKind::kLabelFlip, "label-flip"}};
  return parse_choice<AttackKind>(kKinds, name, "attack");
}

void corrupt_update(const AttackSpec& a, uint32_t client, uint64_t round, uint64_t seed,
                    std::span<float> update) {
  if (!a.attacks(client)) return;
  switch (a.kind) {
    case AttackKind::kSignFlip:
      for (float& v : update) v = -v;
      break;
    case AttackKind::kScale:
      for (float& v : update) v = float(a.scale * double(v));
      break;
    case AttackKind::kNoise: {
      Rng rng(seed, "attack", client, uint32_t(round));
      for (float& v : update) v = float(double(v) + a.sigma * rng.normal());
      break;
    }
    case AttackKind::kNone:
    case AttackKind::kLabelFlip:
      break;
  }
}

void flip_labels(std::vector<int32_t>& labels, std::span<const uint32_t> indices, int classes) {
  for (uint32_t i : indices) labels[i] = classes - 1 - labels[i];
}

}  // namespace fedpar
