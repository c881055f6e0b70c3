// SCAFFOLD (Karimireddy et al. 2020, "Stochastic Controlled Averaging for Federated Learning"),
// option II. Every virtual client i keeps a control variate c_i and the server keeps c, all zero
// at the start. Client i's local steps use the corrected gradient g(y) - c_i + c; after K steps
// of learning rate lr from the sent model x to y it sets
//   c_i+ = c_i - c + (x - y) / (a lr)
// and sends the model delta y - x with dc_i = c_i+ - c_i = -c - (y - x) / (a lr). a is the work
// of the K steps (core/fednova.h): K for plain SGD (the paper's form); with heavy-ball momentum
// how far K steps of a constant gradient move the model in units of lr, so (x - y) / (a lr) is
// still the mean corrected gradient (dividing by K would overstate it up to 1 / (1 - momentum)
// times). The server
// averages the deltas as FedAvg does and sets c += sum_{i in S} p_i dc_i over this round's
// participants S, p_i = w_i / sum of w_j over ALL clients (w the run's weighting: n_i, or 1 for
// the paper's 1 / N), so that c stays sum_i p_i c_i, the control of the objective sum_i p_i F_i
// that the averaged deltas descend. Defined in docs/definitions.md#scaffold.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/weighted_average.h"

namespace fedpar {

// What a client adds to every local gradient: c - c_i.
std::vector<float> scaffold_correction(std::span<const float> c, std::span<const float> c_i);

// dc_i = -c - delta / (work lr) for the client's `delta` = y - x after local steps of `work`
// (fednova_work(steps, momentum)); the caller adds it to c_i and sends it.
std::vector<float> scaffold_control_change(std::span<const float> c, std::span<const float> delta,
                                           double work, float lr);

// The server's c += sum of the participants' raw_weight(w, n_i) / total_weight * dc_i, with
// `total_weight` the raw weights summed over all clients (in double, in client-id order, rounded
// once per coordinate). Throws Error on a size mismatch.
void scaffold_server_control(std::span<const ClientUpdate> changes, Weighting w,
                             double total_weight, std::span<float> c);

}  // namespace fedpar
