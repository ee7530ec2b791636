// Output files written whole or not at all. The data goes to a temporary file beside the target
// (same folder, so the final rename(2) stays on one file system and is atomic), every write and
// the close are checked, and only then is the temporary renamed over the target. On any failure
// the temporary is removed and an existing target is left byte for byte as it was.
//
// Durability: no fsync. The guarantee is against the process failing (a full disk, a file-size
// limit, a signal, a crash), not against the machine losing power; fsync would cost tens of
// milliseconds per file on a busy disk for a planning tool's outputs that can be made again.
//
// Targets that are not regular files (/dev/null, /dev/stdout, a FIFO) cannot be renamed over:
// they are written in place. A symbolic link to a file is followed, and the file it names is
// replaced (the link stays).
#ifndef INFRALENS_BASE_ATOMIC_FILE_H_
#define INFRALENS_BASE_ATOMIC_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace infralens {

// Writes `data` to `path` atomically as described above. IoError naming the path and the
// system's reason (e.g. "File too large", "No such file or directory") on failure.
Status WriteFileAtomically(const std::string& path, std::string_view data);

// The streaming form, for outputs too big to hold in memory:
//   AtomicFile f;
//   RETURN_IF_ERROR(f.Open(path));
//   RETURN_IF_ERROR(f.Write(chunk)); ...
//   RETURN_IF_ERROR(f.Commit());
// Destroying it before Commit (an early return) removes the temporary. Finish() closes and checks
// without renaming, so several files can be completed first and then committed together.
class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile() { Abort(); }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;

  Status Open(const std::string& path);
  Status Write(std::string_view data);
  // The open descriptor (e.g. for zlib's gzdopen on a dup of it); -1 when not open.
  int fd() const { return fd_; }
  // Closes the temporary and checks the close; the target is not touched yet.
  Status Finish();
  // Finish() if needed, then renames the temporary over the target.
  Status Commit();
  // Closes and removes the temporary, if any; the target is untouched. Safe to call twice.
  void Abort();

  const std::string& path() const { return path_; }       // the target, as given
  const std::string& temp_path() const { return temp_; }  // "" when written in place
  uint64_t bytes_written() const { return written_; }

 private:
  std::string path_;    // as given, for messages
  std::string target_;  // after following a symbolic link
  std::string temp_;    // the temporary; empty when writing a non-regular target in place
  int temp_slot_ = -1;  // its place in the list the signal handler removes
  int fd_ = -1;
  bool finished_ = false;
  uint64_t written_ = 0;
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove every temporary an AtomicFile
// has open (unlink(2) only: async-signal-safe), then die of the same signal as before. Call once
// from main; without it an interrupted write leaves its hidden temporary behind.
void RemoveTemporariesOnSignals();

// Whether `file_name` (a name in a folder, no path) is the temporary of an AtomicFile whose
// process no longer runs (".<target>.<pid>-<n>-<hex>.tmp" with no process <pid>): what a write
// killed by SIGKILL or a crash leaves. Such a file may be removed.
bool IsAbandonedTemporary(std::string_view file_name);

}  // namespace infralens

#endif  // INFRALENS_BASE_ATOMIC_FILE_H_
