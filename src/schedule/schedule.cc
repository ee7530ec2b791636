#include "schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/strings.h"

namespace infralens::schedule {

const std::vector<ScheduleInfo>& AllSchedules() {
  static const auto* const kInfos = new std::vector<ScheduleInfo>{
      {ScheduleKind::kGPipe, "gpipe", "GPipe", "fill-drain: all forwards, then all backwards", 1,
       false, false},
      {ScheduleKind::k1F1B, "1f1b", "1F1B",
       "one forward one backward; bounds in-flight activations to P", 1, false, false},
      {ScheduleKind::kInterleaved1F1B, "interleaved-1f1b", "Interleaved1F1B",
       "Megatron's interleaved 1F1B over v chunks per rank; bubble shrinks by v", 2, false, false},
      {ScheduleKind::kLoopedBFS, "looped-bfs", "LoopedBFS",
       "breadth-first: all microbatches through a rank's earlier chunk first", 2, false, false},
      {ScheduleKind::kZBH1, "zb-h1", "InterleavedZeroBubble",
       "zero bubble H1: split backward, W deferred into the 1F1B bubble; 1F1B memory", 1, true,
       false},
      {ScheduleKind::kZBH2, "zb-h2", "ZeroBubbleH2",
       "zero bubble H2: more warm-up forwards, no idle inside a rank's span; up to 2P in flight", 1,
       true, false},
      {ScheduleKind::kZBV, "zbv", "ZBVZeroBubble",
       "V-shaped zero bubble: two chunks per rank in a V", 2, true, true},
      {ScheduleKind::kDualPipeV, "dualpipev", "DualPipeV",
       "DeepSeek's DualPipe folded into a V: overlapped forward/backward pairs", 2, true, true},
  };
  return *kInfos;
}

const ScheduleInfo& Info(ScheduleKind kind) {
  static const auto* const kCustomInfo = new ScheduleInfo{
      ScheduleKind::kCustom, "custom", "custom", "a schedule read from a file", 1, false, false};
  for (const auto& info : AllSchedules()) {
    if (info.kind == kind) return info;
  }
  return *kCustomInfo;
}

namespace {

std::string Normalize(std::string_view name) {
  std::string out;
  for (char c : ToLower(name)) {
    if (c != '-' && c != '_' && c != ' ') out += c;
  }
  return out;
}

}  // namespace

StatusOr<ScheduleKind> ParseScheduleKind(std::string_view name) {
  static const auto* const kAliases = new std::vector<std::pair<std::string_view, ScheduleKind>>{
      {"gpipe", ScheduleKind::kGPipe},
      {"filldrain", ScheduleKind::kGPipe},
      {"1f1b", ScheduleKind::k1F1B},
      {"interleaved1f1b", ScheduleKind::kInterleaved1F1B},
      {"interleaved", ScheduleKind::kInterleaved1F1B},
      {"i1f1b", ScheduleKind::kInterleaved1F1B},
      {"loopedbfs", ScheduleKind::kLoopedBFS},
      {"bfs", ScheduleKind::kLoopedBFS},
      {"zbh1", ScheduleKind::kZBH1},
      {"zb1p", ScheduleKind::kZBH1},
      {"interleavedzerobubble", ScheduleKind::kZBH1},
      {"zbh2", ScheduleKind::kZBH2},
      {"zerobubbleh2", ScheduleKind::kZBH2},
      {"zbv", ScheduleKind::kZBV},
      {"zbvzerobubble", ScheduleKind::kZBV},
      {"dualpipev", ScheduleKind::kDualPipeV},
  };
  std::string key = Normalize(name);
  for (const auto& [alias, kind] : *kAliases) {
    if (key == alias) return kind;
  }
  std::vector<std::string> names;
  for (const auto& info : AllSchedules()) names.emplace_back(info.name);
  std::string hint = ClosestMatch(name, names);
  return InvalidArgument(fmt::format("‹schedule› '{}': unknown schedule{}; valid: {}", name,
                                     hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint),
                                     Join(names, ", ")));
}

int64_t Schedule::num_actions() const {
  int64_t n = 0;
  for (const auto& r : ranks) n += static_cast<int64_t>(r.size());
  return n;
}

bool Schedule::split_backward() const {
  for (const auto& r : ranks) {
    for (const auto& a : r) {
      if (a.type == ActionType::kBackwardInput || a.type == ActionType::kBackwardWeight)
        return true;
    }
  }
  return false;
}

void SetPlacement(Schedule& s, Placement placement) {
  const int S = s.num_stages();
  s.placement = placement;
  s.stage_to_rank.assign(S, 0);
  s.stage_chunk.assign(S, 0);
  for (int st = 0; st < S; ++st) {
    if (placement == Placement::kV) {
      // Rank r holds stages r (chunk 0, going down) and 2P-1-r (chunk 1, coming back up).
      bool down = st < s.pp;
      s.stage_to_rank[st] = down ? st : 2 * s.pp - 1 - st;
      s.stage_chunk[st] = down ? 0 : 1;
    } else {
      s.stage_to_rank[st] = st % s.pp;
      s.stage_chunk[st] = st / s.pp;
    }
  }
}

Status ValidateStructure(const Schedule& s) {
  const int S = s.num_stages();
  const int m = s.microbatches;
  if (static_cast<int>(s.ranks.size()) != s.pp) {
    return InvalidArgument(
        fmt::format("schedule has {} rank rows but pp={}", s.ranks.size(), s.pp));
  }
  if (static_cast<int>(s.stage_to_rank.size()) != S) {
    return Internal("stage placement does not cover every stage");
  }
  // Counts per (stage, microbatch) of F, B, I, W.
  std::vector<uint8_t> count(static_cast<size_t>(S) * m * 4, 0);
  auto tally = [&](int rank, ActionType type, int stage, int mb, const Action& whole) -> Status {
    if (stage < 0 || stage >= S) {
      return InvalidArgument(fmt::format("rank {} action {}: stage {} is outside 0..{}", rank,
                                         ToString(whole), stage, S - 1));
    }
    if (mb < 0 || mb >= m) {
      return InvalidArgument(fmt::format("rank {} action {}: microbatch {} is outside 0..{}", rank,
                                         ToString(whole), mb, m - 1));
    }
    if (s.stage_to_rank[stage] != rank) {
      return InvalidArgument(fmt::format("rank {} action {}: stage {} belongs to rank {}", rank,
                                         ToString(whole), stage, s.stage_to_rank[stage]));
    }
    uint8_t& c = count[(static_cast<size_t>(stage) * m + mb) * 4 + static_cast<int>(type)];
    if (c != 0) {
      return InvalidArgument(
          fmt::format("rank {} action {}: {} of stage {} microbatch {} appears twice", rank,
                      ToString(whole), ActionTypeLetter(type), stage, mb));
    }
    c = 1;
    return Status::Ok();
  };
  for (int r = 0; r < s.pp; ++r) {
    for (const Action& a : s.ranks[r]) {
      if (a.type == ActionType::kOverlapFB) {
        RETURN_IF_ERROR(tally(r, ActionType::kForward, a.stage, a.microbatch, a));
        RETURN_IF_ERROR(tally(r, ActionType::kBackward, a.b_stage, a.b_microbatch, a));
      } else {
        RETURN_IF_ERROR(tally(r, a.type, a.stage, a.microbatch, a));
      }
    }
  }
  for (int st = 0; st < S; ++st) {
    for (int mb = 0; mb < m; ++mb) {
      const uint8_t* c = &count[(static_cast<size_t>(st) * m + mb) * 4];
      bool f = c[0], b = c[1], i = c[2], w = c[3];
      if (!f)
        return InvalidArgument(
            fmt::format("stage {} has no forward (F) for microbatch {}", st, mb));
      if (b && (i || w)) {
        return InvalidArgument(fmt::format(
            "stage {} microbatch {} has both a full backward (B) and a split one (I/W)", st, mb));
      }
      if (!b && !i) {
        return InvalidArgument(
            fmt::format("stage {} has no backward (B or I) for microbatch {}", st, mb));
      }
      if (i && !w) {
        return InvalidArgument(fmt::format(
            "stage {} microbatch {} has an input backward (I) but no weight backward (W)", st, mb));
      }
      if (w && !i) {
        return InvalidArgument(fmt::format(
            "stage {} microbatch {} has a weight backward (W) but no input backward (I)", st, mb));
      }
    }
  }
  return Status::Ok();
}

}  // namespace infralens::schedule
