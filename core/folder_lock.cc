// FolderLock; see folder_lock.h.
#include "core/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace fedpar {

std::optional<FolderLock> FolderLock::try_lock(const std::filesystem::path& dir, bool tidy) {
  // close-on-exec: a child the writer starts (gnuplot) must not hold the lock past it
  const auto file = dir / ".lock";
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  const bool made = fd >= 0;
  if (!made) fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return FolderLock(fd, tidy && made ? file : std::filesystem::path());
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

void FolderLock::release() {
  if (fd_ < 0) return;
  if (!made_.empty()) ::unlink(made_.c_str());  // while held: no one else is asking it
  ::close(fd_);
  fd_ = -1;
}

FolderLock& FolderLock::operator=(FolderLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    made_ = std::move(o.made_);
    o.fd_ = -1;
    o.made_.clear();
  }
  return *this;
}

FolderLock::~FolderLock() { release(); }

}  // namespace fedpar
