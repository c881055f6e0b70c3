// FolderLock; see folder_lock.h.
#include "core/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace fedpar {

std::optional<FolderLock> FolderLock::try_lock(const std::filesystem::path& dir, bool tidy) {
  // close-on-exec: a child the writer starts (gnuplot) must not hold the lock past it
  const auto file = dir / ".lock";
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const bool made = fd >= 0;
    if (!made) fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return std::nullopt;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return std::nullopt;
    }
    // The holder may have removed the file between our open and our flock (a tidy lock's
    // release, a commit): a lock on a file no longer there guards nothing, so open it again.
    struct stat locked = {};
    struct stat named = {};
    if (::fstat(fd, &locked) == 0 && ::stat(file.c_str(), &named) == 0 &&
        locked.st_ino == named.st_ino && locked.st_dev == named.st_dev)
      return FolderLock(fd, tidy && made ? file : std::filesystem::path());
    ::close(fd);
  }
  return std::nullopt;
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
  // removed while held: one that opened it meanwhile finds it gone once it has the lock
  if (!made_.empty()) ::unlink(made_.c_str());
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
