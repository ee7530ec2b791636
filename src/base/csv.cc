#include "base/csv.h"

#include <fmt/format.h>

namespace infralens {

std::string BlankCommentLines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.empty() || line[0] != '#') out.append(line);
    if (end < text.size()) out.push_back('\n');
    pos = end + 1;
  }
  return out;
}

StatusOr<std::vector<std::vector<std::string>>> ParseCsv(std::string_view text, size_t max_fields,
                                                         std::vector<size_t>* row_lines) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  size_t fields = 0, line = 1;
  size_t row_line = 1, quote_line = 1;  // where the current row and the open quote began
  if (row_lines != nullptr) row_lines->clear();
  bool in_quotes = false, quoted = false, after_quote = false;
  auto end_field = [&]() -> Status {
    if (++fields > max_fields)
      return InvalidArgument(fmt::format("more than {} fields", max_fields));
    row.push_back(std::move(field));
    field.clear();
    quoted = after_quote = false;
    return Status::Ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
          after_quote = true;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == ',') {
      RETURN_IF_ERROR(end_field());
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      RETURN_IF_ERROR(end_field());
      if (!(row.size() == 1 && row[0].empty())) {
        rows.push_back(std::move(row));
        if (row_lines != nullptr) row_lines->push_back(row_line);
      }
      row.clear();
      ++line;
      row_line = line;
    } else if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
      quote_line = line;
    } else if (after_quote) {
      return InvalidArgument(fmt::format("line {}: text after a closing quote", line));
    } else {
      field += c;
    }
  }
  if (in_quotes) {
    return InvalidArgument(
        fmt::format("line {}: a quoted field opened here is never closed", quote_line));
  }
  if (!field.empty() || !row.empty() || quoted) {
    RETURN_IF_ERROR(end_field());
    rows.push_back(std::move(row));
    if (row_lines != nullptr) row_lines->push_back(row_line);
  }
  return rows;
}

}  // namespace infralens
