// FolderLock; see folder_lock.h.
#include "core/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace fedpar {

std::optional<FolderLock> FolderLock::try_lock(const std::filesystem::path& dir) {
  // close-on-exec: a child the writer starts (gnuplot) must not hold the lock past it
  const int fd = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return FolderLock(fd);
}

std::optional<bool> FolderLock::held(const std::filesystem::path& dir) {
  const int fd = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  const bool busy = !free && errno == EWOULDBLOCK;
  ::close(fd);                              // and with it the shared lock just taken
  if (!free && !busy) return std::nullopt;  // the lock cannot be asked here: unknown
  return busy;
}

FolderLock& FolderLock::operator=(FolderLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace fedpar
