#include "trace/kernel_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "schedule/action.h"
#include "trace/analysis_internal.h"

namespace infralens::trace {

using internal::Ev;
using internal::RankWork;
using internal::Span;

std::string_view GapKindName(GapKind k) { return k == GapKind::kPureIdle ? "idle" : "p2p_wait"; }

namespace {

// The windows PipelineWindows (cross_rank.cc) measures over (internal::CommonStepWindows), and
// `window_of_step[ri][si]`: the window of rank ri's step si, or -1.
std::vector<internal::StepWindow> Windows(const std::vector<RankWork>& work, bool* has_steps,
                                          std::vector<std::vector<int64_t>>* window_of_step) {
  std::vector<internal::StepWindow> windows = internal::CommonStepWindows(work);
  *has_steps = windows.front().step >= 0;
  window_of_step->assign(work.size(), {});
  if (*has_steps) {
    std::map<int64_t, int64_t> index;
    for (size_t wi = 0; wi < windows.size(); ++wi)
      index[windows[wi].step] = static_cast<int64_t>(wi);
    for (size_t ri = 0; ri < work.size(); ++ri) {
      for (const StepSummary& s : work[ri].steps) {
        auto it = index.find(s.number);
        (*window_of_step)[ri].push_back(it == index.end() ? -1 : it->second);
      }
    }
  }
  return windows;
}

// Cuts `s` to at most `max_bytes`, backing off to a UTF-8 character boundary.
std::string Cut(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "…";
}

// Merges runs of a lane (sorted by begin) whose members are shorter than `res` and less than
// `res` apart. `res` <= 0 keeps every interval.
std::vector<TimelineKernel> MergeKernels(const std::vector<TimelineKernel>& lane, double res) {
  if (res <= 0) return lane;
  std::vector<TimelineKernel> out;
  double cover_end = 0, longest = 0;
  for (const TimelineKernel& x : lane) {
    const double len = x.end_us - x.begin_us;
    if (!out.empty()) {
      TimelineKernel& g = out.back();
      if (g.end_us - g.begin_us < res && len < res && x.begin_us - g.end_us < res &&
          g.cls == x.cls && g.stream == x.stream) {
        g.busy_us += std::max(0.0, x.end_us - std::max(x.begin_us, cover_end));
        cover_end = std::max(cover_end, x.end_us);
        g.end_us = std::max(g.end_us, x.end_us);
        g.count += x.count;
        if (len > longest) longest = len, g.name = x.name;
        continue;
      }
    }
    out.push_back(x);
    cover_end = x.end_us;
    longest = len;
  }
  return out;
}

std::vector<TimelineGap> MergeGaps(const std::vector<TimelineGap>& lane, double res) {
  if (res <= 0) return lane;
  std::vector<TimelineGap> out;
  for (const TimelineGap& x : lane) {
    if (!out.empty()) {
      TimelineGap& g = out.back();
      if (g.end_us - g.begin_us < res && x.end_us - x.begin_us < res &&
          x.begin_us - g.end_us < res && g.kind == x.kind) {
        g.end_us = std::max(g.end_us, x.end_us);
        g.us += x.us;
        g.count += x.count;
        continue;
      }
    }
    out.push_back(x);
  }
  return out;
}

// The exact lanes of one rank: kernels per (class, stream) and gaps per kind, each sorted by
// begin. Keyed by class first, so the answer lists kernels by class, then stream, then start.
struct Lanes {
  std::map<std::pair<int, int64_t>, std::vector<TimelineKernel>> kernels;
  std::vector<TimelineGap> gaps[2];
};

// A send or recv kernel whose metadata names its peer, for the flows.
struct P2pKernel {
  double begin_us, end_us;  // from the origin
  int64_t stream;
};

}  // namespace

namespace {

void Extract(const TraceAnalysis& a, const std::vector<RankWork>& work,
             const KernelTimelineOptions& opt, KernelTimeline* t) {
  *t = KernelTimeline();
  t->max_intervals = opt.max_intervals;
  if (work.empty()) return;
  bool has_steps = false;
  std::vector<std::vector<int64_t>> window_of_step;
  const std::vector<internal::StepWindow> windows = Windows(work, &has_steps, &window_of_step);
  const double origin = windows.front().begin_us;
  t->origin_us = origin;
  for (const internal::StepWindow& w : windows) {
    t->windows.push_back({w.begin_us - origin, w.end_us - origin, w.step});
    t->span_us = std::max(t->span_us, w.end_us - origin);
  }

  std::unordered_map<std::string, int32_t> name_index;
  struct TopAcc {
    int64_t count = 0;
    double total = 0;
  };
  std::map<std::pair<std::string, int>, TopAcc> top;
  double all_kernel_us = 0;
  double action_sum[5] = {0, 0, 0, 0, 0};
  std::vector<Lanes> lanes(work.size());
  // Send kernels by (from, to) and recv kernels by (from, to), in time order.
  std::map<std::pair<int64_t, int64_t>, std::vector<P2pKernel>> sends, recvs;
  int64_t cpu_kept = 0;

  for (size_t ri = 0; ri < work.size(); ++ri) {
    const RankWork& w = work[ri];
    const RankTrace& tr = *w.trace;
    RankTimeline rt;
    rt.rank = a.ranks[ri].rank;
    Lanes& ln = lanes[ri];

    // The PP: annotations that name a compute action, by start, and each kernel's launch time,
    // to attribute compute kernels to actions (both in the traces' own CPU clock).
    struct Pp {
      double ts, end;
      int type;
      double gpu_us = 0;
    };
    std::vector<Pp> pp;
    for (const Annotation& an : tr.pp) {
      std::string_view text(tr.names.Get(an.name));
      if (text.size() < 3) continue;
      auto action = schedule::ParseAction(text.substr(3));
      if (!action.ok()) continue;
      pp.push_back({an.ts_us, an.ts_us + an.dur_us, static_cast<int>(action->type)});
    }
    std::stable_sort(pp.begin(), pp.end(), [](const Pp& x, const Pp& y) { return x.ts < y.ts; });
    std::vector<Launch> launches = tr.launches;
    std::stable_sort(launches.begin(), launches.end(), [](const Launch& x, const Launch& y) {
      return x.correlation < y.correlation;
    });
    auto action_of = [&](const Ev& e) -> Pp* {
      if (pp.empty()) return nullptr;
      const int64_t corr = tr.gpu[e.order].correlation;
      if (corr == -1) return nullptr;
      auto hi = std::upper_bound(launches.begin(), launches.end(), corr,
                                 [](int64_t c, const Launch& l) { return c < l.correlation; });
      if (hi == launches.begin() || (hi - 1)->correlation != corr) return nullptr;
      const double lts = (hi - 1)->ts_us;
      auto it = std::upper_bound(pp.begin(), pp.end(), lts,
                                 [](double v, const Pp& p) { return v < p.ts; });
      if (it == pp.begin()) return nullptr;
      --it;
      return lts < it->end ? &*it : nullptr;
    };

    std::vector<std::vector<Span>> all(windows.size()), comp(windows.size()), p2p(windows.size());
    for (const Ev& e : w.events) {
      int64_t wi = 0;
      if (has_steps) {
        if (e.step < 0) continue;
        wi = window_of_step[ri][e.step];
        if (wi < 0) continue;
      }
      const Span s{std::max(e.ts, windows[wi].begin_us), std::min(e.end, windows[wi].end_us)};
      if (s.end < s.begin) continue;
      all[wi].push_back(s);
      if (e.cls == KernelClass::kCompute) comp[wi].push_back(s);
      if (e.p2p) p2p[wi].push_back(s);
      ++rt.kernels_in_windows;

      const std::string& full = tr.names.Get(e.name);
      auto [it, inserted] = name_index.try_emplace(full, static_cast<int32_t>(t->names.size()));
      if (inserted) t->names.push_back(Cut(full, opt.max_name_bytes));
      const double dur = s.end - s.begin;
      TimelineKernel k;
      k.begin_us = s.begin - origin;
      k.end_us = s.end - origin;
      k.busy_us = dur;
      k.name = it->second;
      k.cls = e.cls;
      k.stream = e.stream;
      ln.kernels[{static_cast<int>(e.cls), e.stream}].push_back(k);
      if (e.p2p && e.coll >= 0 && static_cast<size_t>(e.coll) < tr.collectives.size()) {
        const CollectiveMeta& m = tr.collectives[e.coll];
        const std::string& kind = w.kinds[e.coll];
        if (kind == "send" && m.dst >= 0) {
          sends[{rt.rank, m.dst}].push_back({k.begin_us, k.end_us, e.stream});
        } else if (kind == "recv" && m.src >= 0) {
          recvs[{m.src, rt.rank}].push_back({k.begin_us, k.end_us, e.stream});
        }
      }

      TopAcc& acc = top[{full, static_cast<int>(e.cls)}];
      ++acc.count;
      acc.total += dur;
      all_kernel_us += dur;

      if (e.cls == KernelClass::kCompute) {
        if (Pp* p = action_of(e)) p->gpu_us += dur;
      }
      if (e.cls == KernelClass::kCommunication && e.coll >= 0 &&
          static_cast<size_t>(e.coll) < w.kinds.size() && w.kinds[e.coll] == "send") {
        ++t->p2p_sends;
        t->p2p_send_mean_us += dur;  // a sum until the end
      }
    }
    for (const Pp& p : pp) {
      if (p.gpu_us <= 0) continue;
      ++t->actions[p.type].count;
      action_sum[p.type] += p.gpu_us;
    }

    // Gaps, window by window: pure idle = the window minus every event; p2p wait = send/recv
    // time minus computation (RankResult::pure_idle_us and p2p_wait_us, as intervals).
    auto by_start = [](const Span& x, const Span& y) { return x.begin < y.begin; };
    for (size_t wi = 0; wi < windows.size(); ++wi) {
      std::stable_sort(all[wi].begin(), all[wi].end(), by_start);
      std::stable_sort(comp[wi].begin(), comp[wi].end(), by_start);
      std::stable_sort(p2p[wi].begin(), p2p[wi].end(), by_start);
      const std::vector<Span> m_all = internal::MergeSorted(all[wi]);
      const std::vector<Span> m_comp = internal::MergeSorted(comp[wi]);
      const std::vector<Span> m_p2p = internal::MergeSorted(p2p[wi]);
      auto add_gap = [&](double b, double e, GapKind kind) {
        if (!(e > b)) return;
        TimelineGap g;
        g.begin_us = b - origin;
        g.end_us = e - origin;
        g.us = e - b;
        g.kind = kind;
        ln.gaps[static_cast<int>(kind)].push_back(g);
      };
      double cursor = windows[wi].begin_us;
      for (const Span& s : m_all) {
        add_gap(cursor, s.begin, GapKind::kPureIdle);
        cursor = std::max(cursor, s.end);
      }
      add_gap(cursor, windows[wi].end_us, GapKind::kPureIdle);
      size_t j = 0;
      for (const Span& p : m_p2p) {
        while (j < m_comp.size() && m_comp[j].end <= p.begin) ++j;
        double at = p.begin;
        for (size_t k = j; k < m_comp.size() && m_comp[k].begin < p.end; ++k) {
          add_gap(at, std::min(p.end, m_comp[k].begin), GapKind::kP2pWait);
          at = std::max(at, m_comp[k].end);
        }
        add_gap(at, p.end, GapKind::kP2pWait);
      }
    }
    for (auto& [key, lane] : ln.kernels) {
      std::stable_sort(
          lane.begin(), lane.end(),
          [](const TimelineKernel& x, const TimelineKernel& y) { return x.begin_us < y.begin_us; });
    }
    // CPU lanes: the step and pipelining annotations inside the analysed span. Their names join
    // the table only once the bound has kept them, so the table stays bounded too.
    struct CpuRaw {
      TimelineCpuSpan span;
      const Annotation* an;
    };
    std::vector<CpuRaw> cpu;
    for (const std::vector<Annotation>* list : {&tr.steps, &tr.pp}) {
      for (const Annotation& an : *list) {
        const double b = std::max(an.ts_us - origin, 0.0);
        const double e = std::min(an.ts_us + an.dur_us - origin, t->span_us);
        if (e >= b) cpu.push_back({{b, e, an.tid, -1}, &an});
      }
    }
    std::stable_sort(cpu.begin(), cpu.end(), [](const CpuRaw& x, const CpuRaw& y) {
      return x.span.begin_us < y.span.begin_us;
    });
    const size_t keep = static_cast<size_t>(std::max<int64_t>(0, opt.max_cpu_spans - cpu_kept));
    if (cpu.size() > keep) {
      t->cpu_spans_dropped += static_cast<int64_t>(cpu.size() - keep);
      cpu.resize(keep);
    }
    cpu_kept += static_cast<int64_t>(cpu.size());
    for (CpuRaw& c : cpu) {
      const std::string& full = tr.names.Get(c.an->name);
      auto [it, inserted] = name_index.try_emplace(full, static_cast<int32_t>(t->names.size()));
      if (inserted) t->names.push_back(Cut(full, opt.max_name_bytes));
      c.span.name = it->second;
      rt.cpu.push_back(c.span);
    }
    std::stable_sort(rt.cpu.begin(), rt.cpu.end(),
                     [](const TimelineCpuSpan& x, const TimelineCpuSpan& y) {
                       return x.tid != y.tid ? x.tid < y.tid : x.begin_us < y.begin_us;
                     });
    for (const auto& lane : ln.gaps) {
      for (const TimelineGap& g : lane) {
        (g.kind == GapKind::kPureIdle ? rt.pure_idle_us : rt.p2p_wait_us) += g.us;
      }
    }
    t->ranks.push_back(std::move(rt));
  }

  // The bound: exact if it fits, else merge at a resolution doubled until it does.
  auto build = [&](double res) {
    int64_t n = 0;
    for (size_t ri = 0; ri < lanes.size(); ++ri) {
      RankTimeline& rt = t->ranks[ri];
      rt.kernels.clear();
      rt.gaps.clear();
      for (const auto& [key, lane] : lanes[ri].kernels) {
        std::vector<TimelineKernel> m = MergeKernels(lane, res);
        rt.kernels.insert(rt.kernels.end(), m.begin(), m.end());
      }
      for (const auto& lane : lanes[ri].gaps) {
        std::vector<TimelineGap> m = MergeGaps(lane, res);
        rt.gaps.insert(rt.gaps.end(), m.begin(), m.end());
      }
      n += static_cast<int64_t>(rt.kernels.size() + rt.gaps.size());
    }
    return n;
  };
  t->intervals = build(0);
  if (t->intervals > opt.max_intervals) {
    double res = std::max(t->span_us / std::max(opt.resolution_divisor, 1.0), 1e-3);
    for (int k = 0; k < 80; ++k, res *= 2) {
      t->intervals = build(res);
      t->resolution_us = res;
      if (t->intervals <= opt.max_intervals) break;
    }
  }

  // Names no interval refers to any more (merged away) stay: the table is bounded by the
  // distinct names, which the top-kernels table and the tooltips share.
  std::vector<std::pair<std::pair<std::string, int>, TopAcc>> rows(top.begin(), top.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& x, const auto& y) { return x.second.total > y.second.total; });
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < opt.top_kernels; ++i) {
    TopKernel k;
    k.name = Cut(rows[i].first.first, opt.max_name_bytes);
    k.cls = static_cast<KernelClass>(rows[i].first.second);
    k.count = rows[i].second.count;
    k.total_us = rows[i].second.total;
    k.share = all_kernel_us > 0 ? k.total_us / all_kernel_us : 0;
    t->top_kernels.push_back(std::move(k));
  }
  for (int k = 0; k < 5; ++k) {
    if (t->actions[k].count > 0) t->actions[k].mean_us = action_sum[k] / t->actions[k].count;
  }
  if (t->p2p_sends > 0) t->p2p_send_mean_us /= static_cast<double>(t->p2p_sends);

  // Flows: the k-th send from a to b with the k-th recv on b from a.
  for (auto& [pair, out] : sends) {
    auto in = recvs.find(pair);
    if (in == recvs.end()) continue;
    auto by_begin = [](const P2pKernel& x, const P2pKernel& y) { return x.begin_us < y.begin_us; };
    std::stable_sort(out.begin(), out.end(), by_begin);
    std::stable_sort(in->second.begin(), in->second.end(), by_begin);
    for (size_t k = 0; k < out.size() && k < in->second.size(); ++k) {
      const P2pKernel& s = out[k];
      const P2pKernel& r = in->second[k];
      t->flows.push_back({pair.first, pair.second, s.stream, r.stream, s.begin_us, s.end_us,
                          r.begin_us, r.end_us});
    }
  }
  std::stable_sort(t->flows.begin(), t->flows.end(),
                   [](const TimelineFlow& x, const TimelineFlow& y) {
                     return x.send_begin_us < y.send_begin_us;
                   });
  const size_t max_flows = static_cast<size_t>(std::max<int64_t>(opt.max_flows, 0));
  if (t->flows.size() > max_flows) {
    t->flows_dropped = static_cast<int64_t>(t->flows.size() - max_flows);
    t->flows.resize(max_flows);
  }
}

}  // namespace

StatusOr<TraceAnalysis> AnalyzeWithTimeline(const std::vector<RankTrace>& traces,
                                            const AnalysisOptions& options,
                                            const KernelTimelineOptions& timeline_options,
                                            KernelTimeline* timeline) {
  std::vector<RankWork> work;
  ASSIGN_OR_RETURN(TraceAnalysis a, internal::AnalyzeKeepingWork(traces, options, &work));
  Extract(a, work, timeline_options, timeline);
  return a;
}

StatusOr<TraceAnalysis> AnalyzeLoadedWithTimeline(const LoadedTraces& loaded,
                                                  const AnalysisOptions& options,
                                                  const KernelTimelineOptions& timeline_options,
                                                  KernelTimeline* timeline) {
  *timeline = KernelTimeline();
  // The same answers and errors as AnalyzeLoaded (loader.cc).
  RETURN_IF_ERROR(RequireATrace(loaded));
  ASSIGN_OR_RETURN(TraceAnalysis a,
                   AnalyzeWithTimeline(loaded.traces, options, timeline_options, timeline));
  return WithLoadErrors(loaded, std::move(a));
}

namespace {
// Microseconds to the nanosecond, so that differences of large clock values print short.
double Ns(double us) { return std::round(us * 1000) / 1000; }
}  // namespace

void WriteKernelTimelineJson(JsonWriter& w, const KernelTimeline& t) {
  w.BeginObject();
  w.Field("origin_us", Ns(t.origin_us)).Field("span_us", Ns(t.span_us));
  w.Key("windows").BeginArray();
  for (const TimelineWindow& x : t.windows) {
    w.BeginObject()
        .Field("begin_us", Ns(x.begin_us))
        .Field("end_us", Ns(x.end_us))
        .Field("step", x.step)
        .EndObject();
  }
  w.EndArray();
  w.Field("max_intervals", t.max_intervals).Field("intervals", t.intervals);
  w.Field("merged", t.resolution_us > 0).Field("resolution_us", Ns(t.resolution_us));
  w.Key("classes").BeginArray().String("compute").String("communication").String("memory");
  w.EndArray();
  w.Key("gap_kinds").BeginArray().String("idle").String("p2p_wait").EndArray();
  w.Field("names", t.names);
  w.Key("ranks").BeginArray();
  for (const RankTimeline& r : t.ranks) {
    w.BeginObject().Field("rank", r.rank).Field("kernels_in_windows", r.kernels_in_windows);
    w.Field("pure_idle_us", r.pure_idle_us).Field("p2p_wait_us", r.p2p_wait_us);
    w.Key("kernels").BeginArray();
    for (const TimelineKernel& k : r.kernels) {
      w.BeginArray()
          .Number(Ns(k.begin_us))
          .Number(Ns(k.end_us))
          .Int(static_cast<int>(k.cls))
          .Int(k.name)
          .Int(k.count)
          .Number(Ns(k.busy_us))
          .Int(k.stream)
          .EndArray();
    }
    w.EndArray();
    w.Key("gaps").BeginArray();
    for (const TimelineGap& g : r.gaps) {
      w.BeginArray()
          .Number(Ns(g.begin_us))
          .Number(Ns(g.end_us))
          .Int(static_cast<int>(g.kind))
          .Number(Ns(g.us))
          .Int(g.count)
          .EndArray();
    }
    w.EndArray();
    w.Key("cpu").BeginArray();
    for (const TimelineCpuSpan& c : r.cpu) {
      w.BeginArray().Number(Ns(c.begin_us)).Number(Ns(c.end_us)).Int(c.tid).Int(c.name).EndArray();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("flows").BeginArray();
  for (const TimelineFlow& f : t.flows) {
    w.BeginArray()
        .Int(f.from_rank)
        .Int(f.from_stream)
        .Number(Ns(f.send_begin_us))
        .Number(Ns(f.send_end_us))
        .Int(f.to_rank)
        .Int(f.to_stream)
        .Number(Ns(f.recv_begin_us))
        .Number(Ns(f.recv_end_us))
        .EndArray();
  }
  w.EndArray();
  w.Field("flows_dropped", t.flows_dropped).Field("cpu_spans_dropped", t.cpu_spans_dropped);
  w.Key("top_kernels").BeginArray();
  for (const TopKernel& k : t.top_kernels) {
    w.BeginObject()
        .Field("name", k.name)
        .Field("class", KernelClassName(k.cls))
        .Field("count", k.count)
        .Field("total_us", Ns(k.total_us))
        .Field("share", k.share)
        .EndObject();
  }
  w.EndArray();
  // Measured GPU time per action (per rank, microbatch and model chunk), null when none.
  w.Key("action_us").BeginObject();
  const char* keys[5] = {"f", "b", "i", "w", "fb"};
  for (int k = 0; k < 5; ++k) {
    w.Key(keys[k]);
    if (t.actions[k].count > 0) {
      w.Number(Ns(t.actions[k].mean_us));
    } else {
      w.Null();
    }
  }
  w.EndObject();
  w.Key("action_counts").BeginObject();
  for (int k = 0; k < 5; ++k) w.Field(keys[k], t.actions[k].count);
  w.EndObject();
  w.Key("p2p_send_us");
  if (t.p2p_sends > 0) {
    w.Number(Ns(t.p2p_send_mean_us));
  } else {
    w.Null();
  }
  w.Field("p2p_sends", t.p2p_sends);
  w.EndObject();
}

}  // namespace infralens::trace
