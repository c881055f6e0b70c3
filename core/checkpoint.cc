// Checkpoint files; see checkpoint.h.
#include "core/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/check.h"
#include "core/crc32c.h"

namespace fedpar {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'F', 'D', 'P', 'R', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <typename T>
void put_all(std::vector<uint8_t>& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

[[noreturn]] void fail(const std::string& what, const fs::path& path) {
  throw Error(fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errno)));
}

// Writes all of `bytes` to `path` and fsyncs it; every failure names its cause.
void write_synced(const fs::path& path, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", path);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      fail("write", path);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    fail("sync", path);
  }
  if (::close(fd) != 0) fail("close", path);
}

void sync_folder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open", dir);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  errno = e;
  if (rc != 0) fail("sync", dir);
}

}  // namespace

const std::vector<float>& Checkpoint::floats(const std::string& name) const {
  const auto it = f32.find(name);
  if (it == f32.end()) throw Error(fmt::format("the checkpoint has no float32 vector '{}'", name));
  return it->second;
}

const std::vector<double>& Checkpoint::doubles(const std::string& name) const {
  const auto it = f64.find(name);
  if (it == f64.end()) throw Error(fmt::format("the checkpoint has no float64 vector '{}'", name));
  return it->second;
}

void write_checkpoint(const fs::path& file, const Checkpoint& c) {
  nlohmann::json head = {{"meta", c.meta}, {"vectors", nlohmann::json::array()}};
  for (const auto& [name, v] : c.f32)
    head["vectors"].push_back({{"name", name}, {"dtype", "f32"}, {"count", v.size()}});
  for (const auto& [name, v] : c.f64)
    head["vectors"].push_back({{"name", name}, {"dtype", "f64"}, {"count", v.size()}});
  const std::string text = head.dump();
  std::vector<uint8_t> bytes(std::begin(kMagic), std::end(kMagic));
  put(bytes, kVersion);
  put(bytes, uint64_t(text.size()));
  bytes.insert(bytes.end(), text.begin(), text.end());
  for (const auto& [name, v] : c.f32) put_all(bytes, v);
  for (const auto& [name, v] : c.f64) put_all(bytes, v);
  put(bytes, crc32c(bytes.data(), bytes.size()));
  const fs::path tmp = fs::path(file).concat(".tmp");
  write_synced(tmp, bytes);
  if (::rename(tmp.c_str(), file.c_str()) != 0) fail("rename to", file);
  sync_folder(file.has_parent_path() ? file.parent_path() : fs::path("."));
}

Checkpoint read_checkpoint(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read the checkpoint {}", file.string()));
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const auto bad = [&](const std::string& why) {
    return Error(fmt::format("{} is not a usable checkpoint: {}", file.string(), why));
  };
  constexpr size_t kFixed = sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t);
  if (bytes.size() < kFixed + sizeof(uint32_t) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw bad("not a fedpar checkpoint");
  uint32_t version = 0, crc = 0;
  uint64_t json_len = 0;
  std::memcpy(&version, bytes.data() + sizeof(kMagic), sizeof version);
  std::memcpy(&json_len, bytes.data() + sizeof(kMagic) + sizeof version, sizeof json_len);
  std::memcpy(&crc, bytes.data() + bytes.size() - sizeof crc, sizeof crc);
  if (version != kVersion)
    throw bad(fmt::format("version {}, this fedpar reads {}", version, kVersion));
  const size_t body_end = bytes.size() - sizeof crc;
  if (crc32c(bytes.data(), body_end) != crc) throw bad("its CRC32C does not match (damaged)");
  if (json_len > body_end - kFixed) throw bad("its header runs past the end");
  const auto head = nlohmann::json::parse(bytes.begin() + kFixed,
                                          bytes.begin() + kFixed + std::ptrdiff_t(json_len),
                                          nullptr, /*allow_exceptions=*/false);
  if (!head.is_object() || !head.contains("meta") || !head.contains("vectors") ||
      !head["vectors"].is_array())
    throw bad("its header is not the expected JSON object");
  Checkpoint c;
  c.meta = head["meta"];
  size_t at = kFixed + json_len;
  for (const auto& v : head["vectors"]) {
    if (!v.is_object() || !v.value("name", nlohmann::json()).is_string() ||
        !v.value("count", nlohmann::json()).is_number_unsigned())
      throw bad("a vector entry lacks its name or count");
    const std::string name = v["name"], dtype = v.value("dtype", "");
    const uint64_t count = v["count"];
    const size_t width = dtype == "f32" ? sizeof(float) : dtype == "f64" ? sizeof(double) : 0;
    if (width == 0) throw bad(fmt::format("vector '{}' has dtype '{}'", name, dtype));
    if (count > (body_end - at) / width)
      throw bad(fmt::format("vector '{}' runs past the end", name));
    const auto take = [&](auto& out) {
      out.resize(count);
      if (count > 0) std::memcpy(out.data(), bytes.data() + at, count * width);  // never null
    };
    if (width == sizeof(float))
      take(c.f32[name]);
    else
      take(c.f64[name]);
    at += count * width;
  }
  if (at != body_end) throw bad(fmt::format("{} bytes follow the last vector", body_end - at));
  return c;
}

}  // namespace fedpar
