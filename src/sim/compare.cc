#include "sim/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

namespace infralens::sim {

Costs ChunkCosts(const Costs& per_rank, int v) {
  Costs c = per_rank;
  StageCosts& u = c.uniform;
  u.f_ms /= v;
  u.b_ms /= v;
  u.i_ms /= v;
  u.w_ms /= v;
  if (u.fb_ms >= 0) u.fb_ms /= v;
  return c;
}

std::vector<int> SweepMicrobatches(int m) {
  std::set<int> ms = {1, 2, 4, 8, 16, 32, 64, m};
  return {ms.begin(), ms.end()};
}

namespace {

int ChunksFor(const schedule::ScheduleInfo& info, int vpp_flag) {
  if (vpp_flag > 0 && (info.kind == schedule::ScheduleKind::kInterleaved1F1B ||
                       info.kind == schedule::ScheduleKind::kLoopedBFS)) {
    return vpp_flag;
  }
  return info.default_vpp;
}

CompareRow Evaluate(const schedule::ScheduleInfo& info, int pp, int vpp_flag, int m,
                    const Costs& per_rank) {
  CompareRow row;
  row.info = &info;
  const int vpp = ChunksFor(info, vpp_flag);
  row.vpp = vpp;
  auto s = schedule::Generate(info.kind, {pp, vpp, m});
  if (!s.ok()) {
    row.status = s.status();
    return row;
  }
  auto r = Simulate(*s, ChunkCosts(per_rank, vpp));
  if (!r.ok()) {
    row.status = r.status();
    return row;
  }
  row.result = std::move(r).value();
  for (const auto& rm : row.result.ranks)
    row.peak_chunks = std::max(row.peak_chunks, rm.peak_activations);
  return row;
}

}  // namespace

int64_t CompareWorkBound(int pp, int vpp, int m) {
  using schedule::SaturatingMul;
  auto add = [](int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; };
  int64_t total = 0;
  for (const auto& info : schedule::AllSchedules()) {
    const int64_t per_microbatch = SaturatingMul(SaturatingMul(3, pp), ChunksFor(info, vpp));
    total = add(total, SaturatingMul(per_microbatch, m));  // the main rows
    for (int mm : SweepMicrobatches(m)) total = add(total, SaturatingMul(per_microbatch, mm));
  }
  return total;
}

StatusOr<CompareResult> CompareSchedules(int pp, int vpp, int m, const Costs& per_rank,
                                         const std::function<bool()>& cancelled) {
  if (pp < 1) return InvalidArgument(fmt::format("‹pp› {}: must be at least 1", pp));
  if (m < 1) return InvalidArgument(fmt::format("-m {}: must be at least 1", m));
  if (vpp < 0)
    return InvalidArgument(fmt::format("‹vpp› {}: must be at least 1 (0 = default)", vpp));
  auto stop = [&] { return cancelled && cancelled(); };
  const Status stopped = ResourceExhausted("compare stopped: the time limit was reached");
  CompareResult out;
  out.pp = pp;
  out.microbatches = m;
  out.per_rank = per_rank;
  for (const auto& info : schedule::AllSchedules()) {
    if (stop()) return stopped;
    out.rows.push_back(Evaluate(info, pp, vpp, m, per_rank));
  }
  for (int mm : SweepMicrobatches(m)) {
    std::vector<double> line;
    for (const auto& info : schedule::AllSchedules()) {
      if (stop()) return stopped;
      CompareRow r = Evaluate(info, pp, vpp, mm, per_rank);
      line.push_back(r.status.ok() ? r.result.bubble_fraction : std::nan(""));
    }
    out.sweep.emplace_back(mm, std::move(line));
  }
  return out;
}

}  // namespace infralens::sim
