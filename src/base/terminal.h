// Terminal awareness: colour only on a terminal and never when NO_COLOR is set (no-color.org).
#ifndef INFRALENS_BASE_TERMINAL_H_
#define INFRALENS_BASE_TERMINAL_H_

#include <cstdio>

namespace infralens {

bool IsTerminal(FILE* stream);
// True when `stream` is a terminal and the NO_COLOR environment variable is unset or empty.
bool ColorEnabled(FILE* stream);
// Columns of the terminal behind `stream`, or `fallback` when it is not a terminal.
int TerminalWidth(FILE* stream, int fallback);

}  // namespace infralens

#endif  // INFRALENS_BASE_TERMINAL_H_
