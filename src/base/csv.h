// RFC 4180 CSV: comma-separated, fields optionally in double quotes (with "" for a quote inside).
#ifndef INFRALENS_BASE_CSV_H_
#define INFRALENS_BASE_CSV_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens {

// Splits `text` into rows of fields. A quoted field may hold commas and newlines. InvalidArgument
// naming the line for an unterminated quote (the line where the quote opened) or text after a
// closing quote. At most `max_fields` fields in all, so that a huge input cannot allocate without
// bound. With `row_lines`, the 1-based line on which each row starts (rows may span lines inside
// quotes, and blank lines are skipped, so it is not the row's index).
StatusOr<std::vector<std::vector<std::string>>> ParseCsv(std::string_view text,
                                                         size_t max_fields = 1 << 20,
                                                         std::vector<size_t>* row_lines = nullptr);

// `text` with every line that starts with '#' emptied (the newline kept, so that the line numbers
// of ParseCsv's rows stay those of the file): comments in data files.
std::string BlankCommentLines(std::string_view text);

}  // namespace infralens

#endif  // INFRALENS_BASE_CSV_H_
