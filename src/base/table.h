// A plain-text table: columns padded to their widest cell, numbers right-aligned.
// Used by every command that prints a table, so the CLI's tables look alike.
#ifndef INFRALENS_BASE_TABLE_H_
#define INFRALENS_BASE_TABLE_H_

#include <string>
#include <vector>

namespace infralens {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  explicit TextTable(std::vector<std::string> header);
  // Column alignment; by default the first column is left-aligned and the rest right-aligned.
  void SetAlign(size_t column, Align align);
  void AddRow(std::vector<std::string> cells);
  // Renders with two spaces between columns and a dashed rule under the header.
  std::string Render() const;
  // Renders as a GitHub-flavoured markdown table.
  std::string RenderMarkdown() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace infralens

#endif  // INFRALENS_BASE_TABLE_H_
