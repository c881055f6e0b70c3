// Simulated faulty clients ([attack]): the first `clients` client ids misbehave in every round
// they take part in, so that robust aggregation can be measured against known attackers.
//   sign-flip   send -update
//   scale       send scale x update
//   noise       send update + N(0, sigma^2) per coordinate, from stream (seed, "attack", client,
//               round)
//   label-flip  train honestly on labels y -> (classes - 1 - y) (applied when the data is loaded)
// Defined in docs/definitions.md#simulated-attacks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fedpar {

enum class AttackKind { kNone, kSignFlip, kScale, kNoise, kLabelFlip };

// "none" | "sign-flip" | "scale" | "noise" | "label-flip"; throws Error naming them otherwise.
AttackKind parse_attack(const std::string& name);

struct AttackSpec {
  AttackKind kind = AttackKind::kNone;
  int clients = 0;     // f: client ids 0 .. f-1 attack
  double scale = -10;  // scale: the factor
  double sigma = 1;    // noise: the std
  bool attacks(uint32_t client) const {
    return kind != AttackKind::kNone && client < uint32_t(clients);
  }
};

// What attacking client `client` sends in place of its honest `update` (label-flip: unchanged).
void corrupt_update(const AttackSpec& a, uint32_t client, uint64_t round, uint64_t seed,
                    std::span<float> update);
// label-flip: the attacking client's rows `indices` of `labels` become classes - 1 - y.
void flip_labels(std::vector<int32_t>& labels, std::span<const uint32_t> indices, int classes);

}  // namespace fedpar
