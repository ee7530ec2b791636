#include "trace/pipeline_detect.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "base/strings.h"
#include "schedule/schedule.h"
#include "trace/analysis.h"
#include "trace/analysis_internal.h"

namespace infralens::trace {

namespace {

// Schedules tried against the recovered order generate at most this many actions in all.
constexpr int64_t kMaxMatchActions = 4'000'000;
// Chunks per rank tried when the p2p graph does not tell.
constexpr int kMaxVpp = 16;
// Per rank, the forwards and backwards listed by name (the counts are always exact).
constexpr size_t kMaxListedActions = 10'000;

bool IsP2pKind(const std::string& kind) {
  return kind == "send" || kind == "recv" || kind == "send_recv";
}

std::string RankList(const std::vector<int64_t>& ranks, const char* sep) {
  std::vector<std::string> parts;
  for (int64_t r : ranks) parts.push_back(std::to_string(r));
  return Join(parts, sep);
}

// Sorted (correlation, launch) pairs: the last CPU event of each correlation id, as the analysis
// joins them.
// The autograd operators' spans per thread, merged, for "was this launch inside a backward op".
struct AutogradIndex {
  struct S {
    int64_t tid;
    double begin, end;
  };
  std::vector<S> spans;  // sorted by (tid, begin), disjoint per tid
  explicit AutogradIndex(const RankTrace& tr) {
    std::vector<S> raw;
    raw.reserve(tr.autograd_ops.size());
    for (const CpuSpan& c : tr.autograd_ops) raw.push_back({c.tid, c.ts_us, c.ts_us + c.dur_us});
    std::sort(raw.begin(), raw.end(), [](const S& a, const S& b) {
      return a.tid < b.tid || (a.tid == b.tid && a.begin < b.begin);
    });
    for (const S& s : raw) {
      if (!spans.empty() && spans.back().tid == s.tid && s.begin <= spans.back().end) {
        spans.back().end = std::max(spans.back().end, s.end);
      } else {
        spans.push_back(s);
      }
    }
  }
  bool Contains(int64_t tid, double ts) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(tid, ts),
                               [](const std::pair<int64_t, double>& v, const S& s) {
                                 return v.first < s.tid || (v.first == s.tid && v.second < s.begin);
                               });
    if (it == spans.begin()) return false;
    --it;
    return it->tid == tid && ts <= it->end;
  }
};

}  // namespace

std::vector<std::pair<size_t, std::vector<PipePeer>>> BatchedP2pPeers(const RankTrace& tr) {
  std::vector<std::pair<size_t, std::vector<PipePeer>>> out;
  if (tr.p2p_calls.empty()) return out;
  const internal::LaunchIndex launches(tr);
  // Send/recv kernels with a CPU launch, by thread and launch time.
  struct K {
    int64_t tid;
    double ts;
    size_t gpu;
    bool has_meta;
  };
  std::vector<K> kernels;
  std::vector<int8_t> p2p_name(tr.names.size(), -1);
  for (size_t i = 0; i < tr.gpu.size(); ++i) {
    const GpuEvent& g = tr.gpu[i];
    bool p2p;
    if (g.collective >= 0) {
      const std::string& c = tr.collectives[g.collective].name;
      p2p = IsP2pKind(NormalizeCollectiveKind(c, tr.names.Get(g.name)));
    } else {
      if (p2p_name[g.name] < 0)
        p2p_name[g.name] = IsP2pKind(NormalizeCollectiveKind("", tr.names.Get(g.name))) ? 1 : 0;
      p2p = p2p_name[g.name] == 1;
    }
    if (!p2p) continue;
    const Launch* l = launches.Find(g.correlation);
    if (l == nullptr) continue;
    kernels.push_back({l->tid, l->ts_us, i, g.collective >= 0});
  }
  std::sort(kernels.begin(), kernels.end(), [](const K& a, const K& b) {
    return a.tid < b.tid || (a.tid == b.tid && (a.ts < b.ts || (a.ts == b.ts && a.gpu < b.gpu)));
  });
  std::vector<P2pCall> calls = tr.p2p_calls;
  std::stable_sort(calls.begin(), calls.end(), [](const P2pCall& a, const P2pCall& b) {
    return a.tid < b.tid || (a.tid == b.tid && a.ts_us < b.ts_us);
  });
  // Per thread: the calls after the previous send/recv launch and up to this one belong to it.
  size_t c = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const K& kn = kernels[k];
    while (c < calls.size() && (calls[c].tid < kn.tid ||
                                (calls[c].tid == kn.tid && k > 0 && kernels[k - 1].tid == kn.tid &&
                                 calls[c].ts_us <= kernels[k - 1].ts))) {
      ++c;
    }
    std::vector<PipePeer> peers;
    while (c < calls.size() && calls[c].tid == kn.tid && calls[c].ts_us <= kn.ts) {
      peers.push_back({calls[c].send, calls[c].peer});
      ++c;
    }
    if (!kn.has_meta && !peers.empty()) out.push_back({kn.gpu, std::move(peers)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

namespace {

// Undirected pipeline edges: both directions carry transfers.
struct Graph {
  std::map<std::pair<int64_t, int64_t>, int64_t> weight;  // (from, to) -> transfers
  std::map<int64_t, std::vector<int64_t>> adj;            // bidirectional neighbours
  std::vector<std::pair<int64_t, int64_t>> one_way;       // edges with traffic one way only
  int64_t Both(int64_t a, int64_t b) const {
    auto f = weight.find({a, b}), g = weight.find({b, a});
    return (f == weight.end() ? 0 : f->second) + (g == weight.end() ? 0 : g->second);
  }
};

Graph BuildGraph(const std::vector<PipeRank>& ranks) {
  // A transfer is seen by its sender and by its receiver when both are loaded: each edge takes
  // the larger of the two counts.
  std::map<std::pair<int64_t, int64_t>, int64_t> by_sender, by_receiver;
  for (const PipeRank& r : ranks) {
    for (const PipePeer& p : r.transfers) {
      if (p.peer < 0 || p.peer == r.rank) continue;
      if (p.send) {
        ++by_sender[{r.rank, p.peer}];
      } else {
        ++by_receiver[{p.peer, r.rank}];
      }
    }
  }
  Graph g;
  g.weight = by_sender;
  for (const auto& [e, n] : by_receiver) g.weight[e] = std::max(g.weight[e], n);
  for (const auto& [e, n] : g.weight) {
    const auto [a, b] = e;
    if (g.weight.count({b, a}) == 0) {
      g.one_way.push_back(e);
    } else if (a < b) {
      g.adj[a].push_back(b);
      g.adj[b].push_back(a);
    }
  }
  return g;
}

// The union of the operations of the run of 'P's that ends just before `j` (dir -1) or starts
// just after it (dir +1).
std::vector<const PipePeer*> Adjacent(const PipeRank& r, const std::vector<int>& p_index, size_t j,
                                      int dir) {
  std::vector<const PipePeer*> out;
  for (long k = static_cast<long>(j) + dir; k >= 0 && k < static_cast<long>(r.ops.size());
       k += dir) {
    if (r.ops[k] != 'P') break;
    for (const PipePeer& p : r.p2p[p_index[k]]) out.push_back(&p);
  }
  return out;
}

bool Has(const std::vector<const PipePeer*>& ops, bool send, int64_t peer) {
  return peer >= 0 && std::any_of(ops.begin(), ops.end(), [&](const PipePeer* p) {
           return p->send == send && p->peer == peer;
         });
}

// The pipeline's forwards and backwards of one rank, in order: compute regions next to a receive
// from the stage they read or a send to the stage they feed ('F' reads prev, feeds next; 'B'
// reads next, feeds prev). Other compute (optimizer, data loading, loss scaling) is left out.
std::string CountedPhases(const PipeRank& r, int64_t prev, int64_t next) {
  std::vector<int> p_index(r.ops.size(), -1);
  int n = 0;
  for (size_t j = 0; j < r.ops.size(); ++j) {
    if (r.ops[j] == 'P') p_index[j] = n++;
  }
  std::string out;
  for (size_t j = 0; j < r.ops.size(); ++j) {
    const char c = r.ops[j];
    if (c == 'P') continue;
    const auto before = Adjacent(r, p_index, j, -1), after = Adjacent(r, p_index, j, +1);
    const bool fwd = c == 'F';
    const int64_t reads = fwd ? prev : next, feeds = fwd ? next : prev;
    if (Has(before, false, reads) || Has(after, true, feeds)) out += c;
  }
  return out;
}

// The first send/recv of a rank's step: a send with no receive starts the pipeline (stage 0 runs
// its first forward on its own input); a receive with no send ends it.
int FirstP2pDirection(const PipeRank& r) {
  for (const auto& ops : r.p2p) {
    bool send = false, recv = false;
    for (const PipePeer& p : ops) (p.send ? send : recv) = true;
    if (send && !recv) return +1;
    if (recv && !send) return -1;
    if (send || recv) return 0;
  }
  return 0;
}

struct Chain {
  std::vector<int64_t> ranks;  // stage order
  bool wrap = false;           // the last rank also sends forward to the first (looped chunks)
  std::string note;
};

// The ranks reachable from `start` over the two-way edges, sorted; each is marked seen.
std::vector<int64_t> ComponentOf(const Graph& g, int64_t start, std::set<int64_t>& seen) {
  std::vector<int64_t> comp;
  std::deque<int64_t> q{start};
  seen.insert(start);
  while (!q.empty()) {
    const int64_t u = q.front();
    q.pop_front();
    comp.push_back(u);
    for (int64_t v : g.adj.at(u)) {
      if (seen.insert(v).second) q.push_back(v);
    }
  }
  std::sort(comp.begin(), comp.end());
  return comp;
}

// Walks a component whose ranks have at most two neighbours from `u`, never stepping back to
// `prev` (-1: none), until it has visited them all.
std::vector<int64_t> Walk(const Graph& g, size_t size, int64_t u, int64_t prev) {
  std::vector<int64_t> order{u};
  while (order.size() < size) {
    const auto& nb = g.adj.at(u);
    const int64_t next = nb.size() == 1 ? nb[0] : (nb[0] == prev ? nb[1] : nb[0]);
    prev = u;
    u = next;
    order.push_back(u);
  }
  return order;
}

// A component's stage order: a path from one end, or a cycle cut at its one weaker edge. Refused
// (nullopt, the reason added to `refusals`) when a rank has more than two neighbours or a cycle has
// no weaker edge.
std::optional<Chain> OrderComponent(const Graph& g, const std::vector<int64_t>& comp,
                                    std::vector<std::string>& refusals) {
  std::vector<int64_t> ends;
  for (int64_t u : comp) {
    const size_t deg = g.adj.at(u).size();
    if (deg > 2) {
      refusals.push_back(fmt::format(
          "rank {} exchanges with {} ranks ({}), more than a pipeline stage's two neighbours", u,
          deg, RankList(g.adj.at(u), ", ")));
      return std::nullopt;
    }
    if (deg == 1) ends.push_back(u);
  }
  Chain c;
  if (!ends.empty()) {
    c.ranks = Walk(g, comp.size(), ends[0], -1);
    return c;
  }
  // A cycle: looped chunks (interleaved) wrap from the last rank to the first, and that edge
  // carries (v-1)/v of the others' transfers; with no such weaker edge it is a ring.
  int64_t min_w = std::numeric_limits<int64_t>::max();
  int at_min = 0;
  std::pair<int64_t, int64_t> cut{-1, -1};
  int64_t max_w = 0;
  for (int64_t u : comp) {
    for (int64_t v : g.adj.at(u)) {
      if (u > v) continue;
      const int64_t w = g.Both(u, v);
      max_w = std::max(max_w, w);
      if (w < min_w) {
        min_w = w;
        at_min = 1;
        cut = {u, v};
      } else if (w == min_w) {
        ++at_min;
      }
    }
  }
  if (at_min != 1 || min_w == max_w) {
    refusals.push_back(
        fmt::format("ranks {} exchange in a cycle with no weaker edge: a ring (context-parallel or "
                    "a send/recv collective), not a pipeline",
                    RankList(comp, ", ")));
    return std::nullopt;
  }
  c.wrap = true;
  // Walk the cycle from one end of the cut edge, never crossing it.
  c.ranks = Walk(g, comp.size(), cut.first, cut.second);
  return c;
}

// Orientation: stage 0's first send/recv is a send, the last stage's a receive; by rank order
// (and said so) when neither end shows it.
void Orient(Chain& c, const std::vector<PipeRank>& ranks,
            const std::map<int64_t, size_t>& index_of) {
  auto direction = [&](int64_t r) {
    auto it = index_of.find(r);
    return it == index_of.end() ? 0 : FirstP2pDirection(ranks[it->second]);
  };
  const int head = direction(c.ranks.front()), tail = direction(c.ranks.back());
  if ((tail > 0 && head <= 0) || (head < 0 && tail >= 0)) {
    std::reverse(c.ranks.begin(), c.ranks.end());
  } else if (!(head > 0 || tail < 0)) {
    if (c.ranks.front() > c.ranks.back()) std::reverse(c.ranks.begin(), c.ranks.end());
    c.note =
        "which end is stage 0 is not seen (no loaded end rank starts with a lone send or "
        "receive); taken by rank order";
  }
}

// Why the send/recv kernels make no pipeline: the first refusal, else the one-way transfers.
std::string NoPipelineNote(const std::vector<std::string>& refusals, const Graph& g) {
  if (!refusals.empty()) return refusals[0];
  std::vector<std::string> e;
  for (size_t k = 0; k < g.one_way.size() && k < 8; ++k)
    e.push_back(fmt::format("{}->{}", g.one_way[k].first, g.one_way[k].second));
  return fmt::format(
      "send/recv go one way only ({}{}): a ring or a broadcast, not a pipeline (a pipeline "
      "sends activations forward and gradients back)",
      Join(e, ", "), g.one_way.size() > 8 ? ", ..." : "");
}

// The chains found, each rank's stage where the whole chain is loaded, and the note that says so.
void DescribeChains(const std::vector<Chain>& chains, const std::vector<std::string>& refusals,
                    const std::map<int64_t, size_t>& index_of, PipelineDetection& d) {
  d.detected = true;
  std::vector<std::string> found;
  for (const Chain& c : chains) {
    d.chains.push_back(c.ranks);
    std::vector<int64_t> missing;
    for (int64_t r : c.ranks) {
      if (!index_of.count(r)) missing.push_back(r);
    }
    std::string text =
        fmt::format("{} stages, ranks {}{}", c.ranks.size(), RankList(c.ranks, " -> "),
                    c.wrap ? " (the last sends on to the first: looped chunks)" : "");
    if (!missing.empty()) {
      text += fmt::format("; ranks {} not loaded, so no stage is given", RankList(missing, ", "));
    } else {
      for (size_t s = 0; s < c.ranks.size(); ++s)
        d.stage[index_of.at(c.ranks[s])] = static_cast<int>(s);
    }
    if (!c.note.empty()) text += "; " + c.note;
    found.push_back(text);
  }
  d.note = chains.size() == 1 ? found[0]
                              : fmt::format("{} pipelines: {}", chains.size(), Join(found, "; "));
  if (!refusals.empty()) d.note += "; also " + refusals[0];
}

// The first chain's forward/backward order per rank (`phases`, each a string of 'F' and 'B', nf
// forwards each) against every generated schedule without split backward: the matches, and the
// first match's degrees and actions, into `d`.
void MatchSchedule(const Chain& c, const std::vector<std::string>& phases, int64_t nf,
                   const std::map<int64_t, size_t>& index_of, PipelineDetection& d) {
  const int p = static_cast<int>(c.ranks.size());
  // Chunks per rank: a cycle means looped chunks (v >= 2); a path of more than two ranks one
  // chunk; two ranks cannot tell, so every divisor is tried.
  std::vector<int> vs;
  for (int v = 1; v <= kMaxVpp && v <= nf; ++v) {
    if (nf % v != 0) continue;
    if (c.wrap ? v >= 2 : (v == 1 || p == 2)) vs.push_back(v);
  }
  const int64_t tries = static_cast<int64_t>(vs.size() * schedule::AllSchedules().size());
  if (schedule::SaturatingMul(schedule::SaturatingMul(2 * p, nf), tries) > kMaxMatchActions) {
    d.schedule_note = fmt::format(
        "{} forwards per rank on {} ranks: too many to match against the generated schedules", nf,
        p);
    return;
  }
  for (int v : vs) {
    const int m = static_cast<int>(nf / v);
    for (const schedule::ScheduleInfo& info : schedule::AllSchedules()) {
      if (info.split_backward) continue;
      auto s = schedule::Generate(info.kind, {p, v, m});
      if (!s.ok()) continue;
      bool same = true;
      for (int r = 0; r < p && same; ++r) {
        const auto& acts = s->ranks[r];
        same = acts.size() == phases[r].size();
        for (size_t k = 0; same && k < acts.size(); ++k) {
          const char t = acts[k].type == schedule::ActionType::kForward    ? 'F'
                         : acts[k].type == schedule::ActionType::kBackward ? 'B'
                                                                           : '?';
          same = t == phases[r][k];
        }
      }
      if (!same) continue;
      if (d.matches.empty()) {
        d.pp = p;
        d.vpp = v;
        d.microbatches = m;
        for (int r = 0; r < p; ++r) {
          auto& a = d.actions[index_of.at(c.ranks[r])];
          a.clear();
          for (const schedule::Action& act : s->ranks[r]) a.push_back(schedule::ToString(act));
        }
      }
      if (v == d.vpp) d.matches.emplace_back(info.name);
    }
    if (!d.matches.empty()) break;
  }
  if (d.matches.empty()) {
    d.schedule_note = fmt::format(
        "the forward/backward order ({} forwards per rank) matches no generated schedule{}", nf,
        c.wrap ? " with looped chunks" : "");
  } else {
    d.schedule = d.matches[0];
    d.schedule_note =
        fmt::format("pp {}, {} chunk{} per rank, {} microbatches: order matches {}", d.pp, d.vpp,
                    d.vpp == 1 ? "" : "s", d.microbatches, Join(d.matches, ", "));
  }
}

// Forward/backward order per rank of every fully loaded chain; the schedule from the first chain
// (or why it cannot be told).
void ReadChainOrders(const std::vector<Chain>& chains, const std::vector<PipeRank>& ranks,
                     const std::map<int64_t, size_t>& index_of, PipelineDetection& d) {
  bool first = true;
  for (const Chain& c : chains) {
    const int p = static_cast<int>(c.ranks.size());
    bool loaded = std::all_of(c.ranks.begin(), c.ranks.end(),
                              [&](int64_t r) { return index_of.count(r) > 0; });
    if (!loaded) {
      if (first) d.schedule_note = "not every rank of the pipeline is loaded";
      first = false;
      continue;
    }
    std::vector<std::string> phases(p);
    bool autograd = true;
    for (int s = 0; s < p; ++s) {
      const PipeRank& r = ranks[index_of.at(c.ranks[s])];
      autograd &= r.has_autograd;
      const int64_t prev = s > 0 ? c.ranks[s - 1] : (c.wrap ? c.ranks[p - 1] : -1);
      const int64_t next = s + 1 < p ? c.ranks[s + 1] : (c.wrap ? c.ranks[0] : -1);
      phases[s] = CountedPhases(r, prev, next);
      const size_t i = index_of.at(c.ranks[s]);
      d.forwards[i] = std::count(phases[s].begin(), phases[s].end(), 'F');
      d.backwards[i] = std::count(phases[s].begin(), phases[s].end(), 'B');
      int64_t nf = 0, nb = 0;
      for (char ch : phases[s]) {
        if (d.actions[i].size() >= kMaxListedActions) break;
        d.actions[i].push_back(ch == 'F' ? fmt::format("F{}", nf++) : fmt::format("B{}", nb++));
      }
    }
    if (!first) continue;
    first = false;
    if (!autograd) {
      d.schedule_note =
          "no autograd::engine::evaluate_function CPU operators (profile with "
          "ProfilerActivity.CPU): forwards and backwards cannot be told apart";
      continue;
    }
    const int64_t nf = static_cast<int64_t>(std::count(phases[0].begin(), phases[0].end(), 'F'));
    std::string uneven;
    for (int s = 0; s < p && uneven.empty(); ++s) {
      const int64_t f = std::count(phases[s].begin(), phases[s].end(), 'F');
      const int64_t b = static_cast<int64_t>(phases[s].size()) - f;
      if (f != nf || b != nf) {
        uneven = fmt::format("rank {} ran {} forwards and {} backwards, rank {} {} forwards",
                             c.ranks[s], f, b, c.ranks[0], nf);
      }
    }
    if (nf == 0) {
      d.schedule_note = "no forward or backward next to a send/recv of the pipeline was found";
      continue;
    }
    if (!uneven.empty()) {
      d.schedule_note = "uneven step: " + uneven;
      continue;
    }
    MatchSchedule(c, phases, nf, index_of, d);
  }
}

}  // namespace

PipelineDetection DetectPipeline(const std::vector<PipeRank>& ranks) {
  PipelineDetection d;
  const size_t n = ranks.size();
  d.stage.assign(n, -1);
  d.forwards.assign(n, -1);
  d.backwards.assign(n, -1);
  d.actions.assign(n, {});
  std::map<int64_t, size_t> index_of;
  int64_t p2p_kernels = 0;
  for (size_t i = 0; i < n; ++i) {
    index_of[ranks[i].rank] = i;
    p2p_kernels += ranks[i].p2p_kernels;
  }
  int64_t unnamed = 0;
  for (const PipeRank& r : ranks) unnamed += r.sendrecv_without_metadata;
  if (p2p_kernels == 0 && unnamed == 0) {
    d.note = "no send/recv kernels";
    return d;
  }
  const Graph g = BuildGraph(ranks);
  if (g.weight.empty()) {
    d.note = fmt::format(
        "{} send/recv kernel(s), none naming its peer (no \"Src Rank\"/\"Dst Rank\" metadata on "
        "the "
        "kernel or on record_param_comms send/recv operators before it; a SendRecv kernel without "
        "them is an all-to-all as often as a pipeline transfer)",
        p2p_kernels + unnamed);
    return d;
  }
  // Connected components over the two-way edges, each a candidate pipeline.
  std::vector<Chain> chains;
  std::vector<std::string> refusals;
  std::set<int64_t> seen;
  for (const auto& [start, unused] : g.adj) {
    if (seen.count(start)) continue;
    std::optional<Chain> c = OrderComponent(g, ComponentOf(g, start, seen), refusals);
    if (!c) continue;
    Orient(*c, ranks, index_of);
    chains.push_back(std::move(*c));
  }
  if (chains.empty()) {
    d.note = NoPipelineNote(refusals, g);
    return d;
  }
  DescribeChains(chains, refusals, index_of, d);
  ReadChainOrders(chains, ranks, index_of, d);
  return d;
}

namespace internal {

namespace {

// The first step number every rank analysed with GPU events; -1 with none (then all events).
int64_t FirstCommonStep(const std::vector<RankWork>& work) {
  return CommonStepWindows(work).front().step;  // by step number; at least one window
}

}  // namespace

std::map<int64_t, PipeRank> PipeRanksByStep(const RankWork& w, int64_t rank) {
  const RankTrace& tr = *w.trace;
  PipeRank shared;  // what every step's view has in common: the p2p graph of all analysed steps
  shared.rank = rank;
  shared.has_autograd = !tr.autograd_ops.empty();
  const AutogradIndex autograd(tr);
  const auto batched = BatchedP2pPeers(tr);
  auto peers_of = [&](const Ev& e) {
    std::vector<PipePeer> out;
    if (e.coll >= 0) {
      const CollectiveMeta& m = tr.collectives[e.coll];
      const std::string& kind = w.kinds[e.coll];
      if (kind == "send" && m.dst >= 0) out.push_back({true, m.dst});
      if (kind == "recv" && m.src >= 0) out.push_back({false, m.src});
      return out;
    }
    auto it = std::lower_bound(batched.begin(), batched.end(), e.order,
                               [](const auto& b, size_t i) { return b.first < i; });
    if (it != batched.end() && it->first == e.order) out = it->second;
    return out;
  };
  struct Item {
    double ts;
    size_t order;
    char kind;
    const Ev* ev;
  };
  // The items of every analysed event, once: each step's items are those with its number, in
  // the same order (a subset of a sorted list is sorted), so one sorted list serves them all.
  std::vector<Item> items;
  size_t wanted = 0;
  for (const Ev& e : w.events) wanted += e.p2p || e.cls == KernelClass::kCompute ? 1 : 0;
  items.reserve(wanted);
  for (const Ev& e : w.events) {
    if (!e.p2p && e.coll < 0 && e.cls == KernelClass::kCommunication &&
        IsP2pKind(NormalizeCollectiveKind("", tr.names.Get(e.name)))) {
      ++shared.sendrecv_without_metadata;
    }
    if (!e.p2p && e.cls != KernelClass::kCompute) continue;
    // Its launch, found when the analysis selected it.
    const Launch* l = e.launch != internal::kNoLaunch ? &tr.launches[e.launch] : nullptr;
    if (e.p2p) {
      ++shared.p2p_kernels;
      std::vector<PipePeer> peers = peers_of(e);
      if (peers.empty()) ++shared.p2p_without_peer;
      shared.transfers.insert(shared.transfers.end(), peers.begin(), peers.end());
    }
    char kind = 'P';
    if (!e.p2p) kind = l != nullptr && autograd.Contains(l->tid, l->ts_us) ? 'B' : 'F';
    items.push_back({l != nullptr ? l->ts_us : e.ts, e.order, kind, &e});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.ts < b.ts || (a.ts == b.ts && a.order < b.order);
  });
  // Every analysed event (-1) and each step number.
  std::map<int64_t, PipeRank> out;
  out[-1] = shared;
  for (const StepSummary& s : w.steps) out[s.number] = shared;
  auto add = [&](PipeRank& pr, const Item& it) {
    if (it.kind == 'P') {
      pr.ops += 'P';
      pr.p2p.push_back(peers_of(*it.ev));
    } else if (pr.ops.empty() || pr.ops.back() != it.kind) {
      pr.ops += it.kind;
    }
  };
  PipeRank& every = out[-1];
  for (const Item& it : items) {
    add(every, it);
    if (it.ev->step >= 0) add(out[w.steps[it.ev->step].number], it);
  }
  return out;
}

bool IsBatchedP2p(const std::vector<std::pair<size_t, std::vector<PipePeer>>>& batched,
                  size_t gpu_index) {
  auto it = std::lower_bound(batched.begin(), batched.end(), gpu_index,
                             [](const auto& b, size_t i) { return b.first < i; });
  return it != batched.end() && it->first == gpu_index;
}

void DetectPipelineStructure(const std::vector<RankWork>& work, std::vector<RankResult>& ranks,
                             PipelineResult& pipeline) {
  const int64_t step = FirstCommonStep(work);
  std::vector<PipeRank> input;
  input.reserve(work.size());
  for (size_t i = 0; i < work.size(); ++i) {
    // The step every rank analysed has a view on each rank (PipeRanksByStep); the rank number is
    // the one the job's files settled on.
    auto it = work[i].pipe_by_step.find(step);
    input.push_back(it != work[i].pipe_by_step.end() ? it->second : PipeRank{});
    input.back().rank = ranks[i].rank;
  }
  PipelineDetection d = DetectPipeline(input);
  pipeline.chains = d.chains;

  bool annotated = false;
  for (const RankResult& r : ranks) annotated |= r.pp_annotations > 0;
  if (annotated) {
    // PyTorch pipelining's own record of what ran is the better witness.
    pipeline.detected = true;
    pipeline.source = "PP: annotations";
    pipeline.detect_note =
        pipeline.recovered
            ? fmt::format("PP: annotations on {} ranks", pipeline.pp_rank_of.size())
            : "PP: annotations (schedule not recovered: " + pipeline.recover_note + ")";
    if (d.detected) pipeline.detect_note += "; " + d.note;
    if (pipeline.recovered) {
      for (size_t p = 0; p < pipeline.pp_rank_of.size(); ++p) {
        for (RankResult& r : ranks) {
          if (r.rank == pipeline.pp_rank_of[p]) r.stage = static_cast<int64_t>(p);
        }
      }
      pipeline.detected_pp = pipeline.schedule.pp;
      pipeline.detected_vpp = pipeline.schedule.vpp;
      pipeline.detected_microbatches = pipeline.schedule.microbatches;
      pipeline.detected_matches = pipeline.matches;
    } else {
      for (size_t i = 0; i < ranks.size(); ++i) ranks[i].stage = d.stage[i];
    }
    pipeline.schedule_name =
        pipeline.recovered && !pipeline.matches.empty() ? pipeline.matches[0] : "unknown";
    pipeline.schedule_note = pipeline.recover_note;
    return;
  }
  pipeline.detected = d.detected;
  pipeline.source = d.detected ? "send/recv peers" : "";
  pipeline.detect_note = d.note;
  pipeline.schedule_name = d.schedule;
  pipeline.schedule_note = d.detected ? d.schedule_note : "not a pipeline";
  pipeline.detected_pp = d.pp;
  pipeline.detected_vpp = d.vpp;
  pipeline.detected_microbatches = d.microbatches;
  pipeline.detected_matches = d.matches;
  for (size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].stage = d.stage[i];
    ranks[i].forwards = d.forwards[i];
    ranks[i].backwards = d.backwards[i];
    ranks[i].fb_actions = std::move(d.actions[i]);
  }
}

}  // namespace internal

}  // namespace infralens::trace
