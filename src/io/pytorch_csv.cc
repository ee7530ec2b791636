#include "io/pytorch_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/strings.h"
#include "schedule/rank_actions.h"

namespace infralens::io {

using schedule::Action;
using schedule::ActionType;
using schedule::Schedule;

StatusOr<Schedule> ReadPytorchCsv(std::string_view text, CsvErrorLocation* where) {
  if (text.size() > kMaxCsvBytes) {
    return InvalidArgument(
        fmt::format("CSV of {} bytes exceeds the limit of {} bytes", text.size(), kMaxCsvBytes));
  }
  Schedule s;
  s.kind = schedule::ScheduleKind::kCustom;
  s.name = "custom";
  int max_stage = -1, max_mb = -1;
  int64_t total = 0;
  size_t line_no = 0;
  std::vector<std::vector<Action>> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;  // blank lines (e.g. a trailing newline) carry no rank
    std::vector<Action> row;
    int col = 0;
    for (std::string_view cell : Split(line, ',')) {
      ++col;
      cell = Trim(cell);
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
        cell = cell.substr(1, cell.size() - 2);
      if (cell.empty()) continue;  // idle slot
      auto a = schedule::ParseAction(cell);
      if (!a.ok()) {
        if (where != nullptr) *where = {line_no, col};
        return InvalidArgument(fmt::format("line {} (rank {}), column {}: {}", line_no, rows.size(),
                                           col, a.status().message()));
      }
      if (++total > schedule::kMaxActions) {
        return InvalidArgument(
            fmt::format("more than {} actions (the limit)", schedule::kMaxActions));
      }
      max_stage = std::max({max_stage, a->stage, a->b_stage});
      max_mb = std::max({max_mb, a->microbatch, a->b_microbatch});
      row.push_back(*a);
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return InvalidArgument("the CSV holds no rank rows");
  if (total == 0) return InvalidArgument("the CSV holds no actions");
  s.pp = static_cast<int>(rows.size());
  const int S = max_stage + 1;
  if (S % s.pp != 0) {
    return InvalidArgument(
        fmt::format("{} stages (0..{}) cannot be spread evenly over {} ranks (one row per rank)", S,
                    max_stage, s.pp));
  }
  s.vpp = S / s.pp;
  s.microbatches = max_mb + 1;
  // A complete schedule holds a forward for every (stage, microbatch) pair, so more pairs than
  // actions means something is missing; refusing here also keeps later work proportional to the
  // file's size.
  if (int64_t{S} * s.microbatches > total) {
    return InvalidArgument(fmt::format(
        "stages 0..{} and microbatches 0..{} make {} (stage, microbatch) pairs, but the "
        "file holds only {} actions: every pair needs a forward and a backward",
        max_stage, max_mb, int64_t{S} * s.microbatches, total));
  }
  // Each stage's owner is the row that runs it; a stage on two rows is an error.
  s.stage_to_rank.assign(S, -1);
  for (int r = 0; r < s.pp; ++r) {
    for (const Action& a : rows[r]) {
      for (int st : {a.stage, a.b_stage}) {
        if (st < 0) continue;
        if (s.stage_to_rank[st] == -1) {
          s.stage_to_rank[st] = r;
        } else if (s.stage_to_rank[st] != r) {
          return InvalidArgument(
              fmt::format("stage {} appears on rank {} and rank {}; a stage lives on one rank", st,
                          s.stage_to_rank[st], r));
        }
      }
    }
  }
  for (int st = 0; st < S; ++st) {
    if (s.stage_to_rank[st] == -1)
      return InvalidArgument(fmt::format("stage {} has no actions on any rank", st));
  }
  // Chunk index of each stage on its rank, in stage order; recognise PyTorch's two placements.
  s.stage_chunk.assign(S, 0);
  std::vector<int> held(s.pp, 0);
  for (int st = 0; st < S; ++st) s.stage_chunk[st] = held[s.stage_to_rank[st]]++;
  for (int r = 0; r < s.pp; ++r) {
    if (held[r] != s.vpp) {
      return InvalidArgument(fmt::format(
          "rank {} holds {} stages but every rank must hold {} ({} stages over {} ranks)", r,
          held[r], s.vpp, S, s.pp));
    }
  }
  bool loop = true, vee = s.vpp == 2;
  for (int st = 0; st < S; ++st) {
    loop &= s.stage_to_rank[st] == st % s.pp;
    if (vee) vee &= s.stage_to_rank[st] == (st < s.pp ? st : 2 * s.pp - 1 - st);
  }
  s.placement = loop  ? schedule::Placement::kLoop
                : vee ? schedule::Placement::kV
                      : schedule::Placement::kCustom;
  s.ranks = std::move(rows);
  return s;
}

std::string WritePytorchCsv(const Schedule& s) {
  std::string out;
  for (const auto& row : s.ranks) {
    for (size_t k = 0; k < row.size(); ++k) {
      if (k) out += ',';
      schedule::AppendAction(out, row[k]);
    }
    out += '\n';
  }
  return out;
}

Status StreamPytorchCsv(const Schedule& shape,
                        const std::function<Status(std::string_view)>& sink) {
  constexpr size_t kPiece = size_t{1} << 20;
  std::string buf;
  buf.reserve(kPiece + 64);
  for (int r = 0; r < shape.pp; ++r) {
    bool first = true;
    for (schedule::ActionStream a = schedule::RankActions(shape, r); a.Next();) {
      if (!first) buf += ',';
      first = false;
      schedule::AppendAction(buf, a.current());
      if (buf.size() >= kPiece) {
        RETURN_IF_ERROR(sink(buf));
        buf.clear();
      }
    }
    buf += '\n';
  }
  if (!buf.empty()) RETURN_IF_ERROR(sink(buf));
  return Status::Ok();
}

}  // namespace infralens::io
