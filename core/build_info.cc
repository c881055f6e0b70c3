// source_commit, machine_description; see build_info.h.
#include "core/build_info.h"

#include <fmt/format.h>

#include <fstream>
#include <thread>

#ifdef FEDPAR_HAVE_OPENBLAS
extern "C" char* openblas_get_corename(void);
#endif

namespace fedpar {
namespace {

std::string& commit_storage() {
  static std::string commit;
  return commit;
}

// The value of the first line of `path` that starts with `key` and then `separator`, unquoted.
std::string first_value(const char* path, std::string_view key, char separator) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(key)) continue;
    const size_t at = line.find(separator);
    if (at == std::string::npos) continue;
    std::string v = line.substr(at + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(0, 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
    return v;
  }
  return "";
}

bool cpu_has_avx512f() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("flags")) return line.find(" avx512f") != std::string::npos;
  return false;
}

}  // namespace

const char* build_vector_units() {
#if defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__)
  return "AVX2";
#elif defined(__SSE2__)
  return "SSE2";
#else
  return "not x86";
#endif
}

std::string blas_kernels() {
#ifdef FEDPAR_HAVE_OPENBLAS
  return fmt::format("OpenBLAS {} kernels", openblas_get_corename());
#else
  return "Eigen, no OpenBLAS";
#endif
}

void set_source_commit(std::string_view commit) { commit_storage() = commit; }
const std::string& source_commit() { return commit_storage(); }

std::string machine_description() {
  const std::string cpu = first_value("/proc/cpuinfo", "model name", ':');
  const std::string family = first_value("/proc/cpuinfo", "cpu family", ':');
  const std::string model = first_value("/proc/cpuinfo", "model\t", ':');
  const std::string os = first_value("/etc/os-release", "PRETTY_NAME", '=');
  return fmt::format("{} cores, {} (family {} model {}, {}), {}",
                     std::thread::hardware_concurrency(), cpu.empty() ? "unknown CPU" : cpu,
                     family.empty() ? "?" : family, model.empty() ? "?" : model,
                     cpu_has_avx512f() ? "avx512f" : "no AVX-512", os.empty() ? "unknown OS" : os);
}

std::optional<double> load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  if (in >> one) return one;
  return std::nullopt;
}

std::string build_description() {
  return (source_commit().empty() ? std::string("(commit unknown)") : source_commit()) + " (" +
         build_vector_units() + ", " + blas_kernels() + ")";
}

}  // namespace fedpar
