#include "base/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
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

// The temporaries open now, for the signal handler: a fixed table (no allocation, no lock), each
// slot free (0), being filled (1) or naming a temporary (2). Enough for trace synth's 1,024 rank
// files at once plus a few; a temporary that finds no slot is only left behind by a signal.
constexpr int kTempSlots = 1100;
struct TempSlot {
  std::atomic<int> state{0};
  char path[PATH_MAX] = {};
};
// constinit: zeroes in .bss, touched only when used. (Without it g++ 12 wrote the 1,100 states at
// start-up, faulting in 4.5 MB in every process: a third of a one-layout `plan`'s CPU time.)
constinit TempSlot g_temps[kTempSlots];

int RegisterTemp(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temps[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
      g_temps[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void UnregisterTemp(int& slot) {
  if (slot >= 0) g_temps[slot].state.store(0, std::memory_order_release);
  slot = -1;
}

extern "C" void RemoveTemporariesAndDie(int sig) {
  for (TempSlot& t : g_temps) {
    if (t.state.load(std::memory_order_acquire) == 2) ::unlink(t.path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void RemoveTemporariesOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = RemoveTemporariesAndDie;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A signal the shell set to be ignored (nohup, a background job) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

bool IsAbandonedTemporary(std::string_view name) {
  // ".<target>.<pid>-<n>-<8 hex>.tmp", as TempName makes it.
  constexpr std::string_view kSuffix = ".tmp";
  if (name.size() < 2 + kSuffix.size() || name.front() != '.' ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  const std::string_view stem = name.substr(0, name.size() - kSuffix.size());
  const size_t dot = stem.rfind('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  const std::string_view tag = stem.substr(dot + 1);
  const size_t dash1 = tag.find('-');
  const size_t dash2 = dash1 == std::string_view::npos ? dash1 : tag.find('-', dash1 + 1);
  if (dash2 == std::string_view::npos || tag.size() - dash2 - 1 != 8 || dash1 == 0 || dash1 > 9) {
    return false;
  }
  long pid = 0;
  for (char c : tag.substr(0, dash1)) {
    if (c < '0' || c > '9') return false;
    pid = pid * 10 + (c - '0');
  }
  for (char c : tag.substr(dash1 + 1, dash2 - dash1 - 1)) {
    if (c < '0' || c > '9') return false;
  }
  for (char c : tag.substr(dash2 + 1)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept { *this = std::move(other); }

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Abort();
    path_ = std::move(other.path_);
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    temp_slot_ = other.temp_slot_;
    other.temp_slot_ = -1;
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
    if (fd_ >= 0) {
      temp_slot_ = RegisterTemp(temp_);
      break;
    }
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
  UnregisterTemp(temp_slot_);
  temp_.clear();
  return Status::Ok();
}

void AtomicFile::Abort() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  UnregisterTemp(temp_slot_);
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
