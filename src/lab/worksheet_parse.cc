// Reading a learner's worksheet: markdown pipe tables, then the words in their cells.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/enum_names.h"
#include "base/strings.h"
#include "lab/worksheet.h"

namespace infralens::lab {

namespace {

constexpr size_t kMaxLines = 20000;
constexpr size_t kMaxCells = 64;

// Splits one table line into cells: leading and trailing pipes dropped, "\|" kept as a pipe,
// markdown emphasis (* and `) removed, blanks trimmed.
std::vector<std::string> SplitRow(std::string_view line) {
  line = Trim(line);
  if (!line.empty() && line.front() == '|') line.remove_prefix(1);
  if (!line.empty() && line.back() == '|' && !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
    line.remove_suffix(1);
  }
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (c == '|') {
      cells.emplace_back(Trim(cur));
      cur.clear();
    } else if (c != '*' && c != '`') {
      cur += c;
    }
  }
  cells.emplace_back(Trim(cur));
  return cells;
}

bool IsDelimiterRow(std::string_view line) {
  if (line.find('|') == std::string_view::npos && line.find('-') == std::string_view::npos)
    return false;
  const std::vector<std::string> cells = SplitRow(line);
  for (const std::string& c : cells) {
    std::string_view v = c;
    if (!v.empty() && v.front() == ':') v.remove_prefix(1);
    if (!v.empty() && v.back() == ':') v.remove_suffix(1);
    if (v.empty()) return false;
    for (char ch : v) {
      if (ch != '-') return false;
    }
  }
  return !cells.empty();
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return out;
}

// Lower-case alphanumeric words.
std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool HasWord(const std::vector<std::string>& words, std::string_view w) {
  return std::find(words.begin(), words.end(), w) != words.end();
}

// Earliest position of any of `needles` in `hay` (npos if none).
size_t FirstOf(const std::string& hay, std::initializer_list<std::string_view> needles) {
  size_t best = std::string::npos;
  for (std::string_view n : needles) {
    const size_t p = hay.find(n);
    if (p != std::string::npos && (best == std::string::npos || p < best)) best = p;
  }
  return best;
}

// Text with every non-alphanumeric run folded to one space, lower case, padded: " inside a node ".
std::string Phrase(std::string_view s) {
  std::string out = " ";
  for (const std::string& w : Words(s)) out += w + " ";
  return out;
}

}  // namespace

// Learner text quoted in an error: at most 60 characters, control characters shown as '?', so
// that errors stay one line.
std::string QuoteCell(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > 60) out += "...";
  return out;
}

StatusOr<std::vector<MarkdownTable>> ParseMarkdownTables(std::string_view text) {
  if (text.size() > kMaxWorksheetBytes) {
    return InvalidArgument(
        fmt::format("the worksheet is {} bytes; the limit is {}", text.size(), kMaxWorksheetBytes));
  }
  const std::vector<std::string_view> lines = Lines(text);
  if (lines.size() > kMaxLines) {
    return InvalidArgument(
        fmt::format("the worksheet has {} lines; the limit is {}", lines.size(), kMaxLines));
  }
  std::vector<MarkdownTable> tables;
  size_t i = 0;
  while (i < lines.size()) {
    const std::string_view line = Trim(lines[i]);
    const bool pipe = line.find('|') != std::string_view::npos;
    if (!pipe) {
      ++i;
      continue;
    }
    const bool next_is_delim = i + 1 < lines.size() && IsDelimiterRow(Trim(lines[i + 1]));
    if (!next_is_delim) {
      if (line.front() == '|' && !IsDelimiterRow(line)) {
        return InvalidArgument(
            fmt::format("line {}: '{}' looks like a table row, but no table header is above it (a "
                        "header row must be "
                        "followed by a delimiter row such as | --- | --- |)",
                        i + 1, QuoteCell(line)));
      }
      ++i;
      continue;
    }
    MarkdownTable t;
    t.header_line = static_cast<int>(i + 1);
    t.header = SplitRow(line);
    if (t.header.size() > kMaxCells) {
      return InvalidArgument(
          fmt::format("line {}: {} columns; at most {}", i + 1, t.header.size(), kMaxCells));
    }
    const size_t delim_cells = SplitRow(Trim(lines[i + 1])).size();
    if (delim_cells != t.header.size()) {
      return InvalidArgument(
          fmt::format("line {}: the delimiter row has {} cells, the header above it {}", i + 2,
                      delim_cells, t.header.size()));
    }
    i += 2;
    while (i < lines.size()) {
      const std::string_view row = Trim(lines[i]);
      if (row.empty() || row.find('|') == std::string_view::npos) break;
      std::vector<std::string> cells = SplitRow(row);
      if (cells.size() > t.header.size()) {
        return InvalidArgument(
            fmt::format("line {}: {} cells, but the table's header (line {}) has {}", i + 1,
                        cells.size(), t.header_line, t.header.size()));
      }
      cells.resize(t.header.size());
      t.rows.push_back(std::move(cells));
      t.row_lines.push_back(static_cast<int>(i + 1));
      ++i;
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

namespace {

// The two tables of a worksheet, as their errors name them: the first header cell, the table's
// name and the header expected.
struct TableKind {
  const char* first;
  const char* name;
  const char* header;
};
constexpr TableKind kAxisTable{"Axis", "axis", "| Axis | Degree | Placement | Reason |"};
constexpr TableKind kCommTable{"Communication", "communication",
                               "| Communication | Frequency | Preferred link | Risk |"};

Status SecondTable(const MarkdownTable& t, const TableKind& k) {
  return InvalidArgument(fmt::format("line {}: a second | {} | ... | table (the first is above)",
                                     t.header_line, k.first));
}

Status MissingColumn(const MarkdownTable& t, const TableKind& k, std::string_view column) {
  return InvalidArgument(fmt::format("line {}: the {} table has no {} column (expected {})",
                                     t.header_line, k.name, column, k.header));
}

}  // namespace

StatusOr<Worksheet> ParseWorksheet(std::string_view text) {
  ASSIGN_OR_RETURN(std::vector<MarkdownTable> tables, ParseMarkdownTables(text));
  Worksheet w;
  bool has_axis = false;
  for (const MarkdownTable& t : tables) {
    std::vector<std::string> keys;
    for (const auto& h : t.header) keys.push_back(AlnumKey(h));
    auto col = [&](std::initializer_list<std::string_view> names) -> int {
      for (size_t c = 0; c < keys.size(); ++c) {
        for (std::string_view n : names) {
          if (keys[c] == n) return static_cast<int>(c);
        }
      }
      return -1;
    };
    if (!keys.empty() && keys[0] == "axis") {
      if (has_axis) {
        return SecondTable(t, kAxisTable);
      }
      has_axis = true;
      const int degree = col({"degree", "size", "degrees"});
      const int placement = col({"placement", "where", "location"});
      const int reason = col({"reason", "reasons", "why"});
      if (degree < 0) {
        return MissingColumn(t, kAxisTable, "Degree");
      }
      for (size_t r = 0; r < t.rows.size(); ++r) {
        const auto& row = t.rows[r];
        if (AlnumKey(row[0]).empty() && AlnumKey(row[static_cast<size_t>(degree)]).empty())
          continue;  // blank row
        w.axes.push_back({row[0], row[static_cast<size_t>(degree)],
                          placement >= 0 ? row[static_cast<size_t>(placement)] : "",
                          reason >= 0 ? row[static_cast<size_t>(reason)] : "", t.row_lines[r]});
      }
    } else if (!keys.empty() && keys[0] == "communication") {
      if (w.has_comm_table) {
        return SecondTable(t, kCommTable);
      }
      w.has_comm_table = true;
      const int freq = col({"frequency", "howoften"});
      const int link = col({"preferredlink", "link", "preferred"});
      const int risk = col({"risk", "risks"});
      if (link < 0) {
        return MissingColumn(t, kCommTable, "Preferred link");
      }
      for (size_t r = 0; r < t.rows.size(); ++r) {
        const auto& row = t.rows[r];
        if (AlnumKey(row[0]).empty()) continue;
        w.comms.push_back({row[0], freq >= 0 ? row[static_cast<size_t>(freq)] : "",
                           row[static_cast<size_t>(link)],
                           risk >= 0 ? row[static_cast<size_t>(risk)] : "", t.row_lines[r]});
      }
    }
  }
  if (!has_axis) {
    return InvalidArgument(
        "no | Axis | Degree | Placement | Reason | table found (the lab's first table; its header "
        "row must be "
        "followed by a delimiter row such as | --- | --- | --- | --- |)");
  }
  return w;
}

constexpr EnumName<Where> kWhereNames[] = {{Where::kUnspecified, "unspecified"},
                                           {Where::kInsideNode, "inside a node"},
                                           {Where::kAcrossNodes, "across nodes"},
                                           {Where::kSameRail, "across nodes on one rail"},
                                           {Where::kUnclear, "unclear"}};

const char* WhereName(Where w) { return NameIn(kWhereNames, w); }

Where ParseWhere(std::string_view text) {
  const std::string p = Phrase(text);
  if (p == " ") return Where::kUnspecified;
  if (FirstOf(p, {" same rail", " one rail", " rail aligned", " rail optimi", " single rail",
                  " per rail"}) != std::string::npos) {
    return Where::kSameRail;
  }
  const size_t inside =
      FirstOf(p, {" inside",      " within a node", " within the node", " within one node",
                  " within node", " intra node",    " intranode",       " intra ",
                  " in a node",   " in one node",   " in the node",     " same node",
                  " one node",    " single node",   " nvlink",          " nvswitch",
                  " nvl",         " scale up",      " scaleup",         " local",
                  " same box",    " one box",       " same server",     " one server",
                  " same host",   " xgmi",          " infinity fabric", " on node",
                  " in node"});
  const size_t across = FirstOf(p, {" across",
                                    " inter node",
                                    " internode",
                                    " between nodes",
                                    " multi node",
                                    " multinode",
                                    " cross node",
                                    " network",
                                    " infiniband",
                                    " ib ",
                                    " roce",
                                    " ethernet",
                                    " spine",
                                    " nic",
                                    " scale out",
                                    " scaleout",
                                    " spans",
                                    " span ",
                                    " different nodes",
                                    " other nodes",
                                    " outside"});
  if (inside == std::string::npos && across == std::string::npos) return Where::kUnclear;
  if (across == std::string::npos || (inside != std::string::npos && inside < across))
    return Where::kInsideNode;
  return Where::kAcrossNodes;
}

LinkWish ParseLinkWish(std::string_view text) {
  LinkWish w;
  const std::string p = Phrase(text);
  if (p == " ") return w;
  w.given = true;
  w.understood = true;
  if (FirstOf(p, {" pcie", " pci e", " pci express"}) != std::string::npos) {
    w.link = cluster::LinkClass::kPcie;
  } else if (FirstOf(p, {" nvlink bridge", " bridge"}) != std::string::npos) {
    w.link = cluster::LinkClass::kNvLinkBridge;
  } else if (FirstOf(p, {" spine", " cross rail", " any rail"}) != std::string::npos) {
    w.link = cluster::LinkClass::kSpine;
    w.network = true;
  } else if (FirstOf(p, {" rail"}) != std::string::npos) {
    w.link = cluster::LinkClass::kRail;
    w.network = true;
  } else {
    switch (ParseWhere(text)) {
      case Where::kInsideNode:
        w.link = cluster::LinkClass::kScaleUp;
        break;
      case Where::kAcrossNodes:
        w.network = true;
        break;  // any scale-out class
      case Where::kSameRail:
        w.link = cluster::LinkClass::kRail;
        w.network = true;
        break;
      default:
        w.understood = false;
        break;
    }
  }
  return w;
}

const char* WorksheetAxisName(WorksheetAxis a) {
  static const char* kNames[] = {"TP", "PP", "DP", "FSDP/ZeRO", "CP", "EP", "SP", "VPP"};
  return kNames[static_cast<int>(a)];
}

constexpr EnumName<CommKind> kCommKindNames[] = {
    {CommKind::kTp, "TP collectives"},   {CommKind::kPp, "PP send/recv"},
    {CommKind::kDp, "DP all-reduce"},    {CommKind::kFsdp, "FSDP all-gather"},
    {CommKind::kCp, "CP ring exchange"}, {CommKind::kEp, "EP all-to-all"},
    {CommKind::kOther, "other"}};

const char* CommKindName(CommKind k) { return NameIn(kCommKindNames, k); }

namespace {

StatusOr<WorksheetAxis> ParseAxisName(const std::string& cell, int line) {
  const std::string k = AlnumKey(cell);
  auto starts = [&](std::string_view w) { return k.rfind(w, 0) == 0; };
  if (k == "tp" || starts("tensor")) return WorksheetAxis::kTp;
  if (k == "pp" || starts("pipeline") || k == "pipe") return WorksheetAxis::kPp;
  if (k == "dp" || k == "ddp" || starts("data")) return WorksheetAxis::kDp;
  if (starts("fsdp") || starts("zero") || starts("shard") || starts("distributedoptim"))
    return WorksheetAxis::kZero;
  if (k == "cp" || starts("context")) return WorksheetAxis::kCp;
  if (k == "ep" || starts("expert") || k == "moe") return WorksheetAxis::kEp;
  if (k == "sp" || starts("sequence")) return WorksheetAxis::kSp;
  if (k == "vpp" || k == "vp" || starts("virtual") || starts("interleav"))
    return WorksheetAxis::kVpp;
  return InvalidArgument(
      fmt::format("line {}: axis '{}': expected TP, PP, DP, FSDP/ZeRO, CP or EP (or SP, VPP)", line,
                  QuoteCell(cell)));
}

bool IsNoneWord(const std::string& p) {
  return p == " " || p == " none " || p == " no " || p == " n a " || p == " na " || p == " off " ||
         p == " unused " || p == " not used " || p == " disabled " || p == " false " ||
         p.find(" not needed") == 0;
}

// The first integer in `s`, if any, as a whole token: "8", "tp=8", "8-way", "8x" and "ZeRO-3"
// hold one; "1e400", "1.5" and "2abc" do not (their digits are only the start of something else,
// which once read as 1, 1 and 2).
std::optional<int64_t> FirstInt(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return std::nullopt;
  int64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = v * 10 + (s[i] - '0');
    if (v > 1'000'000'000) return std::nullopt;
    ++i;
  }
  auto alnum = [&](size_t k) {
    return k < s.size() && std::isalnum(static_cast<unsigned char>(s[k]));
  };
  if (i < s.size()) {
    const char next = s[i];
    if ((next == '.' || next == ',') && i + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      return std::nullopt;  // a fraction
    }
    if ((next == 'x' || next == 'X') && !alnum(i + 1)) return v;              // "8x"
    if (std::isalpha(static_cast<unsigned char>(next))) return std::nullopt;  // "1e400", "2abc"
  }
  return v;
}

Status ParseDegree(WorksheetAxis a, const std::string& cell, int line, LearnerAxis& out) {
  const std::string p = Phrase(cell);
  out.degree_empty = Trim(cell).empty();
  if (a == WorksheetAxis::kZero) {
    for (int stage = 0; stage <= 3; ++stage) {
      for (std::string_view pre : {" zero ", " stage ", " zero stage "}) {
        if (p.find(fmt::format("{}{} ", pre, stage)) != std::string::npos ||
            p.find(fmt::format("{}{} ", pre.substr(0, pre.size() - 1), stage)) !=
                std::string::npos) {
          out.degree = stage;
          return Status::Ok();
        }
      }
    }
    if (p.find(" fsdp") != std::string::npos || p.find(" full shard") != std::string::npos ||
        p.find(" fully shard") != std::string::npos || p == " yes " || p == " on ") {
      out.degree = 3;
      if (auto n = FirstInt(cell); n && *n > 3)
        out.fsdp_group = static_cast<int>(std::min<int64_t>(*n, 1 << 20));
      return Status::Ok();
    }
    if (p.find(" distributed optim") != std::string::npos ||
        p.find(" dist optim") != std::string::npos) {
      out.degree = 1;
      return Status::Ok();
    }
    if (IsNoneWord(p) || p == " ddp " || p == " 0 ") {
      out.degree = 0;
      return Status::Ok();
    }
    if (auto n = FirstInt(cell)) {
      if (*n <= 3) {
        out.degree = static_cast<int>(*n);
      } else {
        out.degree = 3;
        out.fsdp_group = static_cast<int>(std::min<int64_t>(*n, 1 << 20));
      }
      return Status::Ok();
    }
    return InvalidArgument(
        fmt::format("line {}: FSDP/ZeRO '{}': expected none, ZeRO-1, ZeRO-2, ZeRO-3 or FSDP", line,
                    QuoteCell(cell)));
  }
  if (a == WorksheetAxis::kSp) {
    if (p == " yes " || p == " on " || p == " true " || p == " 1 " || p == " sp " ||
        p == " enabled ") {
      out.degree = 1;
    } else if (IsNoneWord(p) || p == " 0 ") {
      out.degree = 0;
    } else {
      return InvalidArgument(
          fmt::format("line {}: SP '{}': expected yes or no", line, QuoteCell(cell)));
    }
    return Status::Ok();
  }
  if (IsNoneWord(p) || p == " 1 ") {
    out.degree = 1;
    return Status::Ok();
  }
  auto n = FirstInt(cell);
  if (!n) {
    return InvalidArgument(
        fmt::format("line {}: {} degree '{}': expected a number such as 8, {}=8 or 8-way", line,
                    WorksheetAxisName(a), QuoteCell(cell), WorksheetAxisName(a)));
  }
  if (*n < 1 || *n > cluster::kMaxGpus) {
    return InvalidArgument(fmt::format("line {}: {} degree {}: must be 1..{}", line,
                                       WorksheetAxisName(a), *n, cluster::kMaxGpus));
  }
  out.degree = static_cast<int>(*n);
  return Status::Ok();
}

CommKind ParseCommKind(const std::string& text) {
  const std::vector<std::string> w = Words(text);
  const std::string p = Phrase(text);
  if (HasWord(w, "fsdp") || HasWord(w, "zero3")) return CommKind::kFsdp;
  if (HasWord(w, "tp") || HasWord(w, "tensor") || HasWord(w, "sp")) return CommKind::kTp;
  if (HasWord(w, "pp") || HasWord(w, "pipeline") || HasWord(w, "p2p") ||
      p.find(" send ") != std::string::npos) {
    return CommKind::kPp;
  }
  if (HasWord(w, "cp") || HasWord(w, "context") || HasWord(w, "ring")) return CommKind::kCp;
  if (HasWord(w, "ep") || HasWord(w, "expert") || HasWord(w, "moe") || HasWord(w, "alltoall") ||
      HasWord(w, "a2a") || p.find(" all to all ") != std::string::npos) {
    return CommKind::kEp;
  }
  if (HasWord(w, "dp") || HasWord(w, "data") || HasWord(w, "ddp") || HasWord(w, "allreduce") ||
      p.find(" all reduce ") != std::string::npos || HasWord(w, "gradient") ||
      HasWord(w, "gradients")) {
    return CommKind::kDp;
  }
  return CommKind::kOther;
}

}  // namespace

StatusOr<LearnerDesign> InterpretWorksheet(const Worksheet& w) {
  LearnerDesign d;
  for (const AxisRow& row : w.axes) {
    ASSIGN_OR_RETURN(WorksheetAxis a, ParseAxisName(row.axis, row.line));
    LearnerAxis& ax = d.at(a);
    if (ax.given) {
      return InvalidArgument(fmt::format("line {}: {} appears twice (first on line {})", row.line,
                                         WorksheetAxisName(a), ax.line));
    }
    ax.given = true;
    ax.line = row.line;
    ax.placement = row.placement;
    ax.reason = row.reason;
    ax.where = ParseWhere(row.placement);
    RETURN_IF_ERROR(ParseDegree(a, row.degree, row.line, ax));
  }
  d.has_comm_table = w.has_comm_table;
  for (const CommRow& row : w.comms) {
    LearnerComm c;
    c.kind = ParseCommKind(row.communication);
    c.wish = ParseLinkWish(row.preferred_link);
    c.text = row.communication;
    c.frequency = row.frequency;
    c.preferred_link = row.preferred_link;
    c.risk = row.risk;
    c.line = row.line;
    d.comms.push_back(std::move(c));
  }
  return d;
}

}  // namespace infralens::lab
