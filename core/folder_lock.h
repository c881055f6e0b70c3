// Whether a results folder's writer is alive, asked of the folder itself: its writer holds an
// advisory lock (flock) on FOLDER/.lock for as long as it writes there. A pid in the folder's name
// says nothing on another host sharing the folder (NFS, a cluster's scratch) and can be reused;
// the lock goes with its holder however it dies. Across hosts it holds where the filesystem
// shares flock locks (NFSv4 does; NFS mounted with local_lock=flock, or Lustre with localflock,
// do not).
#pragma once

#include <filesystem>
#include <optional>

namespace fedpar {

class FolderLock {
 public:
  // Locks dir/.lock (made if absent); nullopt when another process (or another lock in this one)
  // holds it. `tidy`: a .lock this call made is removed when the lock is released (a folder that
  // had none, a finished run's that a --resume reads, is left as it was).
  static std::optional<FolderLock> try_lock(const std::filesystem::path& dir, bool tidy = false);
  // Whether a process holds dir's lock now; nullopt where dir has no .lock (a folder written by
  // a fedpar before the lock, or by none).
  static std::optional<bool> held(const std::filesystem::path& dir);

  FolderLock(FolderLock&& o) noexcept : fd_(o.fd_), made_(std::move(o.made_)) {
    o.fd_ = -1;
    o.made_.clear();
  }
  FolderLock& operator=(FolderLock&& o) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();  // releases the lock (the file stays, unless a tidy lock made it)

 private:
  FolderLock(int fd, std::filesystem::path made) : fd_(fd), made_(std::move(made)) {}
  void release();
  int fd_ = -1;
  std::filesystem::path made_;  // the .lock to remove on release (tidy, and made by this lock)
};

}  // namespace fedpar
