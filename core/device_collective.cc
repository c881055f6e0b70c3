// The NCCL registry and the id's hex form; see device_collective.h.
#include "core/device_collective.h"

#include <fmt/format.h>

#include <optional>

#include "core/backend.h"
#include "core/check.h"

namespace fedpar {
namespace {

std::optional<NcclApi>& registered() {  // function-local: static initialisers may register first
  static std::optional<NcclApi> api;
  return api;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

bool register_nccl(const NcclApi& api) {
  FEDPAR_CHECK(!registered()) << "NCCL registered twice";
  registered() = api;
  return true;
}

const NcclApi& nccl() {
  if (!registered()) ensure_cuda_module("allreduce.backend = \"nccl\"");
  if (!registered())
    throw Error(
        "allreduce.backend = \"nccl\": this fedpar's CUDA backend was built without NCCL (nccl.h "
        "was not found at configure time; use backend = \"zmq-ring\" or \"mpi\")");
  return *registered();
}

std::string nccl_id_hex(const NcclUniqueId& id) {
  std::string out;
  out.reserve(2 * id.size());
  for (const uint8_t b : id) out += fmt::format("{:02x}", b);
  return out;
}

NcclUniqueId nccl_id_from_hex(std::string_view hex) {
  NcclUniqueId id{};
  if (hex.size() != 2 * id.size())
    throw Error(fmt::format("a NCCL id is {} hex digits, got {}", 2 * id.size(), hex.size()));
  for (size_t i = 0; i < id.size(); ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) throw Error("a NCCL id holds a character that is no lowercase hex digit");
    id[i] = uint8_t(hi * 16 + lo);
  }
  return id;
}

}  // namespace fedpar
