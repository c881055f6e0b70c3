// read_launch_env and the endpoints; see launch_env.h.
#include "experiments/launch_env.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>

#include "core/check.h"

namespace fedpar {
namespace {

// A whole decimal number, or an error naming the variable.
int env_int(const char* name, const char* value) {
  int v = 0;
  const std::string_view s(value);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw Error(fmt::format("{}='{}' is not a whole number", name, value));
  return v;
}

struct RankVariables {
  const char* launcher;
  const char* rank;
  const char* size;
};

// In order of precedence (launch_env.h says why).
constexpr RankVariables kLaunchers[] = {
    {"torchrun variables", "RANK", "WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
};

bool numeric_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// ZeroMQ writes an IPv6 address in brackets.
std::string endpoint(const std::string& host, int port) {
  return host.find(':') == std::string::npos ? fmt::format("tcp://{}:{}", host, port)
                                             : fmt::format("tcp://[{}]:{}", host, port);
}

}  // namespace

std::string first_slurm_host(std::string_view nodelist) {
  // the first entry ends at the first comma outside brackets
  size_t end = 0;
  for (int depth = 0; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[') ++depth;
    if (nodelist[end] == ']') --depth;
    if (nodelist[end] == ',' && depth == 0) break;
  }
  const std::string_view first = nodelist.substr(0, end);
  const size_t open = first.find('[');
  if (open == std::string_view::npos) return std::string(first);
  // "gpu[07-10,12]": the prefix and the first number of the first range, zero padding kept
  const std::string_view ranges = first.substr(open + 1);
  const size_t stop = ranges.find_first_of("-,]");
  if (stop == 0 || stop == std::string_view::npos)
    throw Error(fmt::format("cannot read the node list '{}'", nodelist));
  return std::string(first.substr(0, open)) + std::string(ranges.substr(0, stop)) +
         std::string(first.substr(first.find(']') + 1));
}

LaunchEnv read_launch_env(const Getenv& getenv) {
  LaunchEnv env;
  for (const auto& l : kLaunchers) {
    const char* rank = getenv(l.rank);
    const char* size = getenv(l.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw Error(
          fmt::format("{} is set but {} is not", rank ? l.rank : l.size, rank ? l.size : l.rank));
    env.launcher = l.launcher;
    env.rank = env_int(l.rank, rank);
    env.world_size = env_int(l.size, size);
    if (env.world_size < 2)
      throw Error(
          fmt::format("{}={}: a job needs at least 2 processes (rank 0 is the server, every "
                      "other rank a client process); start it with e.g. mpirun -n 5",
                      l.size, env.world_size));
    if (env.rank < 0 || env.rank >= env.world_size)
      throw Error(
          fmt::format("{}={} is outside a job of {}={}", l.rank, env.rank, l.size, env.world_size));
    break;
  }
  if (env.launcher.empty())
    throw Error(
        "no launcher's variables are set (RANK and WORLD_SIZE, "
        "OMPI_COMM_WORLD_RANK and _SIZE, or SLURM_PROCID and SLURM_NTASKS): start it under "
        "mpirun -n N, srun or with those variables; on one machine, fedpar run starts every "
        "process itself");
  // srun starts rank 0 on its step's first node (block distribution, the default), which need
  // not be the allocation's first (a step on part of it); mpirun runs rank 0 where it runs, the
  // allocation's first node, and its other nodes' ranks see the step of mpirun's daemons, which
  // leaves that node out
  // (srun's tasks have SLURM_PROCID; mpirun's ranks OMPI's variables, whatever else is set)
  const bool srun = getenv("SLURM_PROCID") && !getenv("OMPI_COMM_WORLD_RANK");
  const char* step = srun ? getenv("SLURM_STEP_NODELIST") : nullptr;
  if (const char* addr = getenv("MASTER_ADDR"); addr && *addr) {
    env.server_host = addr;
    env.host_from = "MASTER_ADDR";
  } else if (step && *step) {
    env.server_host = first_slurm_host(step);
    env.host_from = "SLURM_STEP_NODELIST";
  } else if (const char* nodes = getenv("SLURM_JOB_NODELIST"); nodes && *nodes) {
    env.server_host = first_slurm_host(nodes);
    env.host_from = "SLURM_JOB_NODELIST";
  } else {
    env.server_host = "127.0.0.1";
    env.host_from = "default";
  }
  if (const char* port = getenv("MASTER_PORT"); port && *port) {
    env.port = env_int("MASTER_PORT", port);
    if (env.port < 1 || env.port > 65535)
      throw Error(fmt::format("MASTER_PORT={} is not a TCP port", env.port));
  }
  return env;
}

std::string server_bind_endpoint(const LaunchEnv& env) {
  return endpoint(numeric_address(env.server_host) ? env.server_host : "*", env.port);
}

std::string server_connect_endpoint(const LaunchEnv& env) {
  return endpoint(env.server_host, env.port);
}

}  // namespace fedpar
