// PowerSGD (Vogels et al. 2019): each weight matrix M (n x m; a conv weight as (out, rest)) travels
// as the rank-r factors of one warm-started power-iteration step, P (n x r, orthonormal columns)
// and Q (m x r), with M ~ P Q^T; 1-D tensors, and matrices whose factors would not be smaller,
// travel as raw float32. The encoder keeps each client's Q per tensor for the next round (the warm
// start); decoding needs only the bytes. Definition and byte layout:
// docs/definitions.md#compression (PowerSGD). The pieces (plan, products, orthogonalisation) are
// public: the ring all-reduce uses them too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/codec/codec.h"

namespace fedpar {

constexpr uint32_t kPowerSgdMaxRank = 1024;

// One tensor of the flat vector: at `offset`, `rows` x `cols` floats (a 1-D tensor: rows = size,
// cols = 1); factored when rank (rows + cols) < rows cols, else raw.
struct PowerSgdTensor {
  size_t offset = 0, rows = 0, cols = 0;
  bool factored = false;
  size_t size() const { return rows * cols; }
};
std::vector<PowerSgdTensor> powersgd_plan(const std::vector<std::vector<int64_t>>& shapes,
                                          uint32_t rank);
// The floats one encoding holds: r (n + m) per factored tensor, n m per raw one.
size_t powersgd_wire_floats(std::span<const PowerSgdTensor> plan, uint32_t rank);

// The first Q (cols x r, row-major) of (seed, client, tensor): N(0, 1) draws of
// Rng(seed, "powersgd", client, tensor), row by row.
void powersgd_initial_q(uint64_t seed, uint32_t client, uint32_t tensor, std::span<float> q);
// Replaces each column of q (cols x r) that is all zero or holds a NaN or Inf (a zero or broken
// gradient's Q, which would stay so forever under the warm start) by N(0, 1) draws of
// Rng(splitmix64(seed ^ splitmix64(round)), "powersgd-redraw", client, tensor), column by column.
void powersgd_redraw_dead_columns(uint64_t seed, uint64_t round, uint32_t client, uint32_t tensor,
                                  size_t cols, uint32_t rank, std::span<float> q);

// The products, row-major, accumulated in double in a fixed order (so every rank of a ring gets the
// same bits from the same inputs): p = m q (rows x r), q = m^T p (cols x r), out = p q^T.
void powersgd_mq(std::span<const float> m, size_t rows, size_t cols, std::span<const float> q,
                 uint32_t rank, std::span<float> p);
void powersgd_mtp(std::span<const float> m, size_t rows, size_t cols, std::span<const float> p,
                  uint32_t rank, std::span<float> q);
void powersgd_expand(std::span<const float> p, std::span<const float> q, size_t rows, size_t cols,
                     uint32_t rank, std::span<float> out);
// Gram-Schmidt on p's columns (rows x r) in double, in column order: each column loses its
// projections on the earlier ones and is divided by its norm; a column whose norm is exactly zero
// becomes zero (it then adds nothing to P Q^T), and NaN or Inf stay (the receiver refuses them).
void powersgd_orthonormalise(std::span<float> p, size_t rows, uint32_t rank);

// Throws Error unless 1 <= rank <= kPowerSgdMaxRank and shapes are given.
std::unique_ptr<Codec> make_powersgd_codec(const CodecParams& p);

}  // namespace fedpar
