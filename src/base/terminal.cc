#include "base/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

namespace infralens {

bool IsTerminal(FILE* stream) { return isatty(fileno(stream)) == 1; }

bool ColorEnabled(FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return IsTerminal(stream);
}

int TerminalWidth(FILE* stream, int fallback) {
  if (!IsTerminal(stream)) return fallback;
  winsize ws{};
  if (ioctl(fileno(stream), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return fallback;
}

}  // namespace infralens
