// Cross-rank analyses: collective matching (wait vs transfer, stragglers, clock offsets), the
// pipeline bubble over windows shared by all ranks, and the schedule recovered from PP:
// annotations.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "trace/analysis_internal.h"

namespace infralens::trace::internal {

std::vector<int64_t> ParseRankList(const std::string& text) {
  std::vector<int64_t> out;
  std::string_view s = Trim(text);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return {};
  s = s.substr(1, s.size() - 2);
  if (Trim(s).empty()) return {};
  for (std::string_view part : Split(s, ',')) {
    auto v = ParseInt(part);
    if (!v) return {};
    out.push_back(*v);
  }
  return out;
}

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Member {
  size_t rank_idx;
  size_t ev;
};

struct Instance {
  std::vector<Member> members;
  size_t expected = 0;  // loaded participants
  bool by_kernel_order = false;
  bool p2p = false;  // a send/recv pair: used for clock offsets, not for wait/transfer
};

}  // namespace

void MatchCollectives(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                      CrossRankResult& cross, bool align_clocks) {
  if (work.size() < 2) return;
  std::unordered_map<int64_t, size_t> idx_of_rank;
  for (size_t i = 0; i < work.size(); ++i) idx_of_rank[ranks[i].rank] = i;

  std::map<std::string, Instance> instances;
  std::set<std::string> methods;
  // Without metadata, kernels of one name are matched by their order when every rank ran the
  // same number of them.
  std::map<std::string, std::vector<int64_t>> name_counts;  // kernel name -> count per rank
  for (size_t ri = 0; ri < work.size(); ++ri) {
    const RankTrace& tr = *work[ri].trace;
    std::map<std::string, int64_t> ordinal;
    for (size_t k = 0; k < work[ri].events.size(); ++k) {
      const Ev& e = work[ri].events[k];
      if (e.cls != KernelClass::kCommunication) continue;
      if (e.coll < 0) {
        const std::string& name = tr.names.Get(e.name);
        auto& counts = name_counts[name];
        counts.resize(work.size(), 0);
        const int64_t n = counts[ri]++;
        Instance& inst = instances["k:" + name + "#" + std::to_string(n)];
        inst.members.push_back({ri, k});
        inst.expected = work.size();
        inst.by_kernel_order = true;
        continue;
      }
      const CollectiveMeta& m = tr.collectives[e.coll];
      const std::string& kind = work[ri].kinds[e.coll];
      const std::string group = !m.pg_name.empty()    ? m.pg_name
                                : !m.pg_ranks.empty() ? m.pg_ranks
                                                      : "world";
      std::string key;
      size_t expected = 0;
      if (kind == "send" || kind == "recv") {
        const int64_t peer = kind == "send" ? m.dst : m.src;
        if (peer < 0 || !idx_of_rank.count(peer)) continue;
        const int64_t from = kind == "send" ? ranks[ri].rank : peer;
        const int64_t to = kind == "send" ? peer : ranks[ri].rank;
        const std::string pair = fmt::format("p2p:{}:{}>{}", group, from, to);
        key = pair + "#" + std::to_string(ordinal[pair]++);
        expected = 2;
        methods.insert("order");
      } else {
        std::vector<int64_t> members = ParseRankList(m.pg_ranks);
        if (members.empty()) {
          expected = work.size();
        } else {
          for (int64_t r : members) expected += idx_of_rank.count(r);
        }
        if (m.seq >= 0) {
          key = fmt::format("c:{}:seq{}", group, m.seq);
          methods.insert("seq");
        } else {
          const std::string g = "c:" + group;
          key = g + "#" + std::to_string(ordinal[g]++);
          methods.insert("order");
        }
      }
      if (expected < 2) continue;  // the other participants' traces are not loaded
      Instance& inst = instances[key];
      inst.members.push_back({ri, k});
      inst.expected = expected;
      inst.p2p = kind == "send" || kind == "recv";
    }
  }
  // Kernel-order matches are trusted only for names every rank ran equally often, and only if
  // the matched kernels overlap in time (a collective's kernels all run at once).
  std::set<std::string> rejected_names;
  {
    std::map<std::string, std::pair<int64_t, int64_t>> overlap;  // name -> (overlapping, total)
    for (const auto& [key, inst] : instances) {
      if (!inst.by_kernel_order) continue;
      const std::string name = key.substr(2, key.rfind('#') - 2);
      const auto& counts = name_counts[name];
      bool equal =
          std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; });
      if (!equal) {
        rejected_names.insert(name);
        continue;
      }
      double max_start = -std::numeric_limits<double>::infinity(),
             min_end = std::numeric_limits<double>::infinity();
      for (const Member& m : inst.members) {
        max_start = std::max(max_start, work[m.rank_idx].events[m.ev].ts);
        min_end = std::min(min_end, work[m.rank_idx].events[m.ev].end);
      }
      auto& o = overlap[name];
      o.second++;
      if (max_start <= min_end) o.first++;
    }
    for (const auto& [name, o] : overlap) {
      if (o.first < o.second) rejected_names.insert(name);
    }
    bool any_kernel_order = false;
    for (const auto& [name, counts] : name_counts) {
      if (!rejected_names.count(name)) any_kernel_order = true;
    }
    if (any_kernel_order) methods.insert("kernel order");
  }

  std::vector<const Instance*> complete;
  for (const auto& [key, inst] : instances) {
    if (inst.by_kernel_order && rejected_names.count(key.substr(2, key.rfind('#') - 2))) continue;
    std::set<size_t> seen;
    for (const Member& m : inst.members) seen.insert(m.rank_idx);
    if (seen.size() == inst.expected && inst.members.size() == inst.expected) {
      complete.push_back(&inst);
    } else {
      ++cross.unmatched;
    }
  }
  if (!rejected_names.empty()) {
    cross.note = fmt::format(
        "{} kernel name(s) without collective metadata could not be matched across ranks (counts "
        "differ or the "
        "k-th kernels do not overlap in time)",
        rejected_names.size());
  }
  if (complete.empty()) {
    if (cross.note.empty()) cross.note = "no collective ran on two or more of the loaded ranks";
    return;
  }
  cross.method = Join(std::vector<std::string>(methods.begin(), methods.end()), "+");
  for (const Instance* inst : complete) (inst->p2p ? cross.p2p_instances : cross.instances)++;

  // Clock offsets: collectives end at nearly the same instant on every participant.
  std::vector<std::vector<double>> diffs(work.size());
  for (const Instance* inst : complete) {
    const Member* ref = nullptr;
    for (const Member& m : inst->members) {
      if (m.rank_idx == 0) ref = &m;
    }
    if (ref == nullptr) continue;
    const double e0 = work[0].events[ref->ev].end;
    for (const Member& m : inst->members)
      diffs[m.rank_idx].push_back(work[m.rank_idx].events[m.ev].end - e0);
  }
  double max_offset = 0;
  for (size_t ri = 0; ri < work.size(); ++ri) {
    ranks[ri].clock_offset_us = Median(diffs[ri]);
    max_offset = std::max(max_offset, std::abs(ranks[ri].clock_offset_us));
  }
  if (align_clocks) {
    for (size_t ri = 0; ri < work.size(); ++ri) {
      const double off = ranks[ri].clock_offset_us;
      if (off == 0) continue;
      for (Ev& e : work[ri].events) e.ts -= off, e.end -= off;
      work[ri].first_us -= off, work[ri].last_us -= off;
      for (StepSummary& s : work[ri].steps) s.gpu_start_us -= off, s.gpu_end_us -= off;
      for (StepSummary& s : ranks[ri].steps) s.gpu_start_us -= off, s.gpu_end_us -= off;
    }
  } else if (max_offset > 100) {
    cross.note += fmt::format(
        "{}collective ends differ by up to {:.0f} us between ranks (clock offset?); "
        "--align-clocks corrects for it",
        cross.note.empty() ? "" : "; ", max_offset);
  }

  // Wait (until the last participant arrives) and transfer (from then to the end), collectives
  // only: in a send/recv pair the receiver waiting for the sender is the pipeline's dependency,
  // counted in the pipeline view as p2p wait.
  for (const Instance* inst : complete) {
    if (inst->p2p) continue;
    double last = -std::numeric_limits<double>::infinity(), second = last;
    size_t last_idx = 0;
    for (const Member& m : inst->members) {
      const double s = work[m.rank_idx].events[m.ev].ts;
      if (s > last) {
        second = last;
        last = s;
        last_idx = m.rank_idx;
      } else if (s > second) {
        second = s;
      }
    }
    for (const Member& m : inst->members) {
      const Ev& e = work[m.rank_idx].events[m.ev];
      RankResult& r = ranks[m.rank_idx];
      r.coll_wait_us += last - e.ts;
      r.coll_transfer_us += std::max(0.0, e.end - last);
      ++r.coll_matched;
    }
    ++ranks[last_idx].coll_last_arrivals;
    ranks[last_idx].coll_delay_caused_us += last - second;
  }
  std::vector<size_t> order(work.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranks[a].coll_delay_caused_us > ranks[b].coll_delay_caused_us;
  });
  double total_delay = 0;
  for (const RankResult& r : ranks) total_delay += r.coll_delay_caused_us;
  // A straggler: the last to arrive for a share of the total delay well above an even split.
  for (size_t i : order) {
    if (total_delay > 0 &&
        ranks[i].coll_delay_caused_us > 1.5 * total_delay / static_cast<double>(work.size())) {
      cross.stragglers.push_back(ranks[i].rank);
    }
  }
}

std::vector<StepWindow> CommonStepWindows(const std::vector<RankWork>& work) {
  // Steps analysed on every rank, by number.
  std::map<int64_t, size_t> have;
  for (const RankWork& w : work) {
    std::set<int64_t> numbers;
    for (const StepSummary& s : w.steps) {
      if (s.analyzed && s.gpu_events > 0 && s.number >= 0) numbers.insert(s.number);
    }
    for (int64_t n : numbers) ++have[n];
  }
  std::vector<StepWindow> windows;
  for (const auto& [n, count] : have) {
    if (count != work.size()) continue;
    double b = std::numeric_limits<double>::infinity(), e = -b;
    for (const RankWork& w : work) {
      for (const StepSummary& s : w.steps) {
        if (s.number == n && s.analyzed && s.gpu_events > 0)
          b = std::min(b, s.gpu_start_us), e = std::max(e, s.gpu_end_us);
      }
    }
    windows.push_back({b, e, n});
  }
  if (windows.empty()) {
    double b = std::numeric_limits<double>::infinity(), e = -b;
    for (const RankWork& w : work) b = std::min(b, w.first_us), e = std::max(e, w.last_us);
    windows.push_back({b, e, -1});
  }
  return windows;
}

WindowLengths LengthsOf(const std::vector<const Ev*>& events) {
  // A sub-microsecond event rounded inwards (HTA's time base) has end < start and is left out.
  auto skipped = [](const Ev* ev) { return ev->end < ev->ts; };
  // The usual case, events already in start order (a rank's, a step's): merged as they go by,
  // holding only the merged computation and p2p spans; the same groups and sums as sorting.
  bool in_order = true;
  double last_begin = -std::numeric_limits<double>::infinity();
  for (const Ev* ev : events) {
    if (skipped(ev)) continue;
    if (ev->ts < last_begin) {
      in_order = false;
      break;
    }
    last_begin = ev->ts;
  }
  // Hands each counted span to the union of all, of computation and of p2p.
  auto route = [&events, &skipped](auto&& to_all, auto&& to_comp, auto&& to_p2p) {
    for (const Ev* ev : events) {
      if (skipped(ev)) continue;
      const Span s{ev->ts, ev->end};
      to_all(s);
      if (ev->cls == KernelClass::kCompute) to_comp(s);
      if (ev->p2p) to_p2p(s);
    }
  };
  std::vector<Span> m_comp, m_p2p;
  double all_us = 0;
  if (in_order) {
    SpanMerger all, comp(&m_comp), p2p(&m_p2p);
    route([&all](const Span& s) { all.Add(s); }, [&comp](const Span& s) { comp.Add(s); },
          [&p2p](const Span& s) { p2p.Add(s); });
    all_us = all.Finish();
    comp.Finish();
    p2p.Finish();
  } else {
    std::vector<Span> all, comp, p2p_spans;
    route([&all](const Span& s) { all.push_back(s); },
          [&comp](const Span& s) { comp.push_back(s); },
          [&p2p_spans](const Span& s) { p2p_spans.push_back(s); });
    auto by_start = [](const Span& a, const Span& b) { return a.begin < b.begin; };
    std::stable_sort(all.begin(), all.end(), by_start);
    std::stable_sort(comp.begin(), comp.end(), by_start);
    std::stable_sort(p2p_spans.begin(), p2p_spans.end(), by_start);
    all_us = Length(MergeSorted(all));
    m_comp = MergeSorted(comp);
    m_p2p = MergeSorted(p2p_spans);
  }
  // p2p time not under computation: |p2p| - |p2p and compute|.
  double both = 0;
  size_t j = 0;
  for (const Span& p : m_p2p) {
    while (j < m_comp.size() && m_comp[j].end <= p.begin) ++j;
    for (size_t k = j; k < m_comp.size() && m_comp[k].begin < p.end; ++k) {
      both += std::max(0.0, std::min(p.end, m_comp[k].end) - std::max(p.begin, m_comp[k].begin));
    }
  }
  WindowLengths out;
  out.compute_us = Length(m_comp);
  out.all_us = all_us;
  out.p2p_wait_us = Length(m_p2p) - both;
  return out;
}

void PipelineWindows(std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline) {
  if (work.empty()) return;
  const std::vector<StepWindow> windows = CommonStepWindows(work);
  pipeline.has_steps = windows.front().step >= 0;
  pipeline.windows = static_cast<int64_t>(windows.size());
  for (const StepWindow& x : windows) pipeline.window_us += x.end_us - x.begin_us;
  pipeline.step_time_us = pipeline.window_us / static_cast<double>(windows.size());

  // A window holds the events of its step on each rank (their lengths computed per rank before
  // any clock shift, RankWork::step_lengths), or with no common step every analysed event. A
  // step's events lie inside its window (the window spans that step's events on every rank), so
  // nothing is clipped.
  double bubble = 0, p2p = 0, idle = 0;
  const WindowLengths none;
  for (size_t ri = 0; ri < work.size(); ++ri) {
    const RankWork& w = work[ri];
    RankResult& r = ranks[ri];
    for (const StepWindow& x : windows) {
      const WindowLengths* l = &w.all_lengths;
      if (pipeline.has_steps) {
        auto it = w.step_lengths.find(x.step);
        l = it == w.step_lengths.end() ? &none : &it->second;
      }
      const double window = x.end_us - x.begin_us;
      r.pipeline_window_us += window;
      r.no_compute_us += window - l->compute_us;
      r.pure_idle_us += window - l->all_us;
      r.p2p_wait_us += l->p2p_wait_us;
    }
    r.bubble_us = r.pure_idle_us + r.p2p_wait_us;
    r.bubble_pct = r.pipeline_window_us > 0 ? 100 * r.bubble_us / r.pipeline_window_us : 0;
    bubble += r.bubble_us;
    p2p += r.p2p_wait_us;
    idle += r.pure_idle_us;
  }
  const double denom = pipeline.window_us * static_cast<double>(work.size());
  if (denom > 0) {
    pipeline.bubble_fraction = bubble / denom;
    pipeline.p2p_wait_fraction = p2p / denom;
    pipeline.pure_idle_fraction = idle / denom;
  }
}

void RecoverSchedule(const std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                     PipelineResult& pipeline) {
  std::vector<size_t> with_pp;
  for (size_t i = 0; i < work.size(); ++i) {
    if (!work[i].pp_by_step.empty()) with_pp.push_back(i);
  }
  if (with_pp.empty()) return;
  // The first step number every such rank has actions for.
  int64_t step = 0;
  bool found = false;
  for (const auto& entry : work[with_pp[0]].pp_by_step) {
    const int64_t n = entry.first;
    bool all = std::all_of(with_pp.begin(), with_pp.end(),
                           [&](size_t i) { return work[i].pp_by_step.count(n) > 0; });
    if (all) {
      step = n;
      found = true;
      break;
    }
  }
  if (!found) {
    pipeline.recover_note = "PP: annotations found, but no step has them on every rank";
    return;
  }
  for (size_t i : with_pp) ranks[i].pp_actions = work[i].pp_by_step.at(step);
  // Stages each rank runs; a stage on two ranks means several pipeline replicas were loaded.
  std::map<int32_t, int64_t> rank_of_stage;
  std::vector<int32_t> min_stage(work.size(), std::numeric_limits<int32_t>::max());
  int32_t max_stage = -1, max_mb = -1;
  for (size_t i : with_pp) {
    for (const schedule::Action& a : ranks[i].pp_actions) {
      std::vector<std::pair<int32_t, int32_t>> halves = {{a.stage, a.microbatch}};
      if (a.type == schedule::ActionType::kOverlapFB) halves.push_back({a.b_stage, a.b_microbatch});
      for (auto [s, mb] : halves) {
        if (s < 0 || mb < 0 || s > 1'000'000 || mb > 100'000'000) {
          pipeline.recover_note =
              fmt::format("rank {}: action {} has an out-of-range stage or microbatch",
                          ranks[i].rank, schedule::ToString(a));
          return;
        }
        auto [it, inserted] = rank_of_stage.emplace(s, ranks[i].rank);
        if (!inserted && it->second != ranks[i].rank) {
          pipeline.recover_note = fmt::format(
              "stage {} runs on ranks {} and {}: the traces hold several pipeline replicas; "
              "analyse one replica's "
              "files to recover its schedule",
              s, it->second, ranks[i].rank);
          return;
        }
        min_stage[i] = std::min(min_stage[i], s);
        max_stage = std::max(max_stage, s);
        max_mb = std::max(max_mb, mb);
      }
    }
  }
  const int pp = static_cast<int>(with_pp.size());
  const int stages = max_stage + 1;
  // A complete schedule runs a forward for every (stage, microbatch): with fewer actions than
  // that it cannot be complete, and nothing is sized by the stated ranges.
  int64_t halves = 0;
  for (size_t i : with_pp) {
    for (const schedule::Action& a : ranks[i].pp_actions)
      halves += a.type == schedule::ActionType::kOverlapFB ? 2 : 1;
  }
  if (static_cast<int64_t>(stages) * (max_mb + 1) > halves) {
    pipeline.recover_note = fmt::format("incomplete: {} actions for {} stages x {} microbatches",
                                        halves, stages, max_mb + 1);
    return;
  }
  if (stages % pp != 0) {
    pipeline.recover_note =
        fmt::format("{} stages do not divide evenly over {} pipeline ranks", stages, pp);
    return;
  }
  // Pipeline rank = order of the lowest stage a rank holds (both looped and V placements).
  std::vector<size_t> order = with_pp;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return min_stage[a] < min_stage[b]; });
  schedule::Schedule s;
  s.name = "recovered";
  s.pp = pp;
  s.vpp = stages / pp;
  s.microbatches = max_mb + 1;
  s.ranks.resize(pp);
  std::unordered_map<int64_t, int> pp_rank_of_global;
  for (int p = 0; p < pp; ++p) {
    s.ranks[p] = ranks[order[p]].pp_actions;
    pipeline.pp_rank_of.push_back(ranks[order[p]].rank);
    pp_rank_of_global[ranks[order[p]].rank] = p;
  }
  std::vector<int32_t> observed(stages, -1);
  for (const auto& [st, global] : rank_of_stage) observed[st] = pp_rank_of_global[global];
  bool placed = false;
  for (schedule::Placement placement : {schedule::Placement::kLoop, schedule::Placement::kV}) {
    if (placement == schedule::Placement::kV && s.vpp != 2) continue;
    schedule::SetPlacement(s, placement);
    bool ok = true;
    for (int st = 0; st < stages; ++st)
      ok &= observed[st] < 0 || observed[st] == s.stage_to_rank[st];
    if (ok) {
      placed = true;
      break;
    }
  }
  if (!placed) {
    s.placement = schedule::Placement::kCustom;
    s.stage_to_rank = observed;
    s.stage_chunk.assign(stages, 0);
    std::vector<int> next(pp, 0);
    for (int st = 0; st < stages; ++st) {
      if (observed[st] >= 0) s.stage_chunk[st] = next[observed[st]]++;
    }
  }
  pipeline.recovered = true;
  Status valid = schedule::ValidateStructure(s);
  for (const schedule::ScheduleInfo& info : schedule::AllSchedules()) {
    auto g = schedule::Generate(info.kind, {pp, s.vpp, s.microbatches});
    if (g.ok() && g->ranks == s.ranks) pipeline.matches.emplace_back(info.name);
  }
  if (!valid.ok()) {
    pipeline.recover_note = "incomplete: " + valid.message();
  } else if (pipeline.matches.empty()) {
    pipeline.recover_note = "matches no generated schedule";
  } else {
    pipeline.recover_note = "matches " + Join(pipeline.matches, ", ");
    s.name = pipeline.matches[0];
  }
  pipeline.schedule = std::move(s);
}

}  // namespace infralens::trace::internal
