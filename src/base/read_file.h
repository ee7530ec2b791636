// Reading a whole input file with a size limit, so that no argument can make a command allocate
// without bound (a --cluster TOML, a --stage-costs CSV, a worksheet, a published-runs CSV).
#ifndef INFRALENS_BASE_READ_FILE_H_
#define INFRALENS_BASE_READ_FILE_H_

#include <cstddef>
#include <string>

#include "base/status.h"

namespace infralens {

// OK when `path` names a regular file (after following links), or does not exist (the open that
// follows says so). InvalidArgument naming the path otherwise: a FIFO would block the read until
// some writer appears, a device (/dev/zero, /dev/urandom) never ends, a folder is not a file.
// /dev/stdin is accepted: asking for it is asking to read a pipe.
Status CheckRegularFile(const std::string& path);

// The file's bytes; "-" reads standard input. NotFound when it cannot be opened, InvalidArgument
// naming the path and the limit when it holds more than `max_bytes`, or when it is not a regular
// file (CheckRegularFile), IoError when a read fails.
StatusOr<std::string> ReadFileLimited(const std::string& path, size_t max_bytes);

// An input file named on the command line that is malformed (or too large) is a failure, exit 1,
// as one that is missing is: not a usage error (exit 2 is the command line itself; docs/cli.md,
// "Exit codes"). InvalidArgument, what parsers return, becomes FailedPrecondition; other codes
// are kept.
Status AsFileFailure(Status st);

}  // namespace infralens

#endif  // INFRALENS_BASE_READ_FILE_H_
