#include "base/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

namespace infralens {

namespace {

std::string Reason(int err) { return std::strerror(err); }

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A name nobody else is using: pid, a process-wide counter and random bits, and O_EXCL makes
// sure (a clash is retried with new random bits).
std::string TempName(const std::string& target) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}/.{}.{}-{}-{:08x}.tmp", FolderOf(target), BaseOf(target),
                     static_cast<long>(::getpid()), counter.fetch_add(1),
                     static_cast<uint32_t>(rng()));
}

}  // namespace

AtomicFile::AtomicFile(AtomicFile&& other) noexcept { *this = std::move(other); }

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Abort();
    path_ = std::move(other.path_);
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    fd_ = other.fd_;
    finished_ = other.finished_;
    written_ = other.written_;
    other.fd_ = -1;
    other.temp_.clear();
    other.finished_ = false;
  }
  return *this;
}

Status AtomicFile::Open(const std::string& path) {
  Abort();
  path_ = target_ = path;
  finished_ = false;
  written_ = 0;
  if (path.empty()) return InvalidArgument("output file: the name is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace the file the link names, not the link.
    std::error_code ec;
    std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (!ec) target_ = real.string();
  }
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return IoError(fmt::format("{}: is a folder", path));
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or FIFO: renaming over it would replace the device node itself.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0)
      return IoError(fmt::format("{}: cannot open for writing ({})", path, Reason(errno)));
    return Status::Ok();
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = TempName(target_);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    const int err = errno;
    temp_.clear();
    if (err != EEXIST) {
      return IoError(
          fmt::format("{}: cannot create a file in {} ({})", path, FolderOf(target_), Reason(err)));
    }
  }
  if (fd_ < 0)
    return IoError(fmt::format("{}: no free temporary name in {}", path, FolderOf(target_)));
  // Keep a replaced file's permissions (a new file gets 0666 less the umask, as open makes it).
  if (exists) (void)::fchmod(fd_, st.st_mode & 07777);
  return Status::Ok();
}

Status AtomicFile::Write(std::string_view data) {
  if (fd_ < 0) return IoError(fmt::format("{}: not open for writing", path_));
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      Abort();
      return IoError(
          fmt::format("{}: write failed after {} bytes ({})", path_, written_, Reason(err)));
    }
    data.remove_prefix(static_cast<size_t>(n));
    written_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::Finish() {
  if (finished_) return Status::Ok();
  if (fd_ < 0) return IoError(fmt::format("{}: not open for writing", path_));
  // close(2) can report a delayed write error (NFS, quotas); the data is not safe until it passes.
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const int err = errno;
    Abort();
    return IoError(fmt::format("{}: write failed at close ({})", path_, Reason(err)));
  }
  finished_ = true;
  return Status::Ok();
}

Status AtomicFile::Commit() {
  RETURN_IF_ERROR(Finish());
  finished_ = false;
  if (temp_.empty()) return Status::Ok();  // written in place
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    Abort();
    return IoError(fmt::format("{}: cannot replace it ({})", path_, Reason(err)));
  }
  temp_.clear();
  return Status::Ok();
}

void AtomicFile::Abort() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  finished_ = false;
}

Status WriteFileAtomically(const std::string& path, std::string_view data) {
  AtomicFile f;
  RETURN_IF_ERROR(f.Open(path));
  RETURN_IF_ERROR(f.Write(data));
  return f.Commit();
}

}  // namespace infralens
