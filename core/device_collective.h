// allreduce.backend = "nccl": the gradient sum over the client processes' GPUs. The interface is
// here, below server/ and clients/, which use it; the CUDA module (kernels/nccl_allreduce.cc, built
// when NCCL is found) registers the implementation when it loads.
// NCCL's communicator is made from a unique id that one process creates (its bootstrap root runs
// in that process until every rank has joined): the server creates it and sends it to every worker
// with its rank in the RING message.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace fedpar {

using NcclUniqueId = std::array<uint8_t, 128>;  // NCCL_UNIQUE_ID_BYTES

// One rank's place in a NCCL communicator on this process's GPU (device 0, as the cuda backend's).
class DeviceAllReduce {
 public:
  virtual ~DeviceAllReduce() = default;
  // Sums `data` (host memory) over every rank in place: copied to the GPU, ncclAllReduce (float,
  // sum) and back. Every rank calls it with the same length. Throws Error when NCCL fails or a
  // rank is missing past the deadline (the communicator is then aborted: later sums throw too).
  virtual void sum(std::span<float> data) = 0;
};

struct NcclApi {
  std::string version;                    // "NCCL 2.28.9"
  NcclUniqueId (*unique_id)() = nullptr;  // needs no GPU
  // Joins the communicator of `size` ranks as `rank`; blocks until every rank has. NCCL runs its
  // ring algorithm with the simple protocol (NCCL_ALGO, NCCL_PROTO unless set): one summation
  // order, so every rank and every run gets the same bits. A sum that waits longer than
  // `deadline_seconds` (joining: at least 60 s) aborts the communicator and throws Error.
  std::unique_ptr<DeviceAllReduce> (*join)(const NcclUniqueId& id, int rank, int size,
                                           double deadline_seconds) = nullptr;
};

bool register_nccl(const NcclApi& api);  // the CUDA module's initialiser
// The registered NCCL, loading the CUDA module first when this program has it as one; Error
// saying why there is none.
const NcclApi& nccl();

// The id as 256 lowercase hex digits (how the RING message carries it), and back; Error when
// `hex` is not 256 hex digits.
std::string nccl_id_hex(const NcclUniqueId& id);
NcclUniqueId nccl_id_from_hex(std::string_view hex);

}  // namespace fedpar
