// Simulated attacks; see attack.h.
#include "core/attack.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/rng.h"

namespace fedpar {

AttackKind parse_attack(const std::string& name) {
  if (name == "none") return AttackKind::kNone;
  if (name == "sign-flip") return AttackKind::kSignFlip;
  if (name == "scale") return AttackKind::kScale;
  if (name == "noise") return AttackKind::kNoise;
  if (name == "label-flip") return AttackKind::kLabelFlip;
  throw Error(
      fmt::format("unknown attack '{}' (valid: none, sign-flip, scale, noise, label-flip)", name));
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
