#include "base/table.h"

#include <algorithm>

namespace infralens {
namespace {

// Display width of a UTF-8 string: counts code points, not bytes, so "×" or "µ" pad correctly.
size_t DisplayWidth(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string Pad(const std::string& s, size_t width, TextTable::Align align) {
  size_t w = DisplayWidth(s);
  if (w >= width) return s;
  std::string fill(width - w, ' ');
  return align == TextTable::Align::kLeft ? s + fill : fill + s;
}

}  // namespace

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {
  align_.assign(header_.size(), Align::kRight);
  if (!align_.empty()) align_[0] = Align::kLeft;
}

void TextTable::SetAlign(size_t column, Align align) {
  if (column < align_.size()) align_[column] = align;
}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = DisplayWidth(header_[c]);
    for (const auto& r : rows_) width[c] = std::max(width[c], DisplayWidth(r[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += "  ";
      bool last = c + 1 == cells.size();
      out += (last && align_[c] == Align::kLeft) ? cells[c] : Pad(cells[c], width[c], align_[c]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string TextTable::RenderMarkdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const auto& c : cells) out += " " + c + " |";
    return out + "\n";
  };
  std::string out = line(header_);
  out += "|";
  for (size_t c = 0; c < header_.size(); ++c)
    out += align_[c] == Align::kLeft ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace infralens
