// infralens: the only place that turns a Status into a process exit code (via RunCli).
#include <csignal>
#include <cstdio>
#include <iostream>

#include "base/atomic_file.h"
#include "base/terminal.h"
#include "cli/cli.h"

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) the kernel sends SIGXFSZ, which kills the process by
  // default; ignored, the write fails with EFBIG instead and the command reports it (and removes
  // its temporary file, base/atomic_file.h).
  std::signal(SIGXFSZ, SIG_IGN);
  // Ctrl-C or a kill in the middle of a write removes the hidden temporary it was writing.
  infralens::RemoveTemporariesOnSignals();
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  infralens::cli::CliIO io{std::cout, std::cerr, infralens::ColorEnabled(stdout),
                           infralens::TerminalWidth(stdout, 100)};
  int code = infralens::cli::RunCli(args, io);
  std::cout.flush();
  return code;
}
