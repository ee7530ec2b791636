// infralens comm: one collective on one group of a placed job (or the first N ranks): the
// algorithm chosen, predicted time, algbw and busbw (nccl-tests' convention), the link class
// that bounds it and the bytes each GPU puts on every link class.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "base/json_writer.h"
#include "base/table.h"
#include "base/units.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "collective/collective.h"
#include "request/cluster_flags.h"
#include "request/engine_requests.h"
#include "request/json_or_text.h"

namespace infralens::request {

namespace {

using cluster::LinkClass;
using collective::Collective;
using collective::Estimate;

// JSON lists the group's ranks up to this many (first_rank and last_rank always).
constexpr size_t kMaxListedRanks = 256;

std::string Us(double seconds) { return fmt::format("{:.1f}", seconds * 1e6); }
std::string GBps(double bytes_per_s) { return fmt::format("{:.2f}", bytes_per_s / 1e9); }

std::string FactorText(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "2(n-1)/n";
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return "(n-1)/n";
    default:
      return "1";
  }
}

std::string BytesText(double bytes) {
  const int64_t whole = static_cast<int64_t>(std::llround(bytes));
  return fmt::format("{} ({})", whole, FormatBytes(whole));
}

std::string TextOf(const cluster::Cluster& c, const CommTarget& t, const std::vector<Estimate>& all,
                   const collective::Request& r) {
  const Estimate& e = all.front();
  std::string out =
      fmt::format("{} of {} ({} bytes) on {}: {} node{} x {} GPUs\n",
                  collective::CollectiveName(e.collective), FormatBytes(e.size_bytes), e.size_bytes,
                  c.name, c.num_nodes, c.num_nodes == 1 ? "" : "s", c.node.gpus_per_node);
  if (t.kind == "ranks") {
    out += fmt::format("group: ranks {}-{} ({} ranks on {} node{})\n", t.ranks.front(),
                       t.ranks.back(), e.ranks, e.nodes, e.nodes == 1 ? "" : "s");
  } else {
    out += fmt::format(
        "group: {} group {} of {} ({} ranks on {} node{}; the slowest group, all run at once)\n",
        t.kind, t.group_index, t.groups, e.ranks, e.nodes, e.nodes == 1 ? "" : "s");
  }
  std::string how = r.algorithm == collective::Algorithm::kAuto
                        ? fmt::format("auto: fastest of {}", all.size())
                        : "as requested";
  out += fmt::format("algorithm:  {}, protocol {} ({})\n", collective::AlgorithmName(e.algorithm),
                     collective::ProtocolName(e.protocol), how);
  out += fmt::format("time:       {} us (latency {} us + bandwidth {} us)\n", Us(e.time_s),
                     Us(e.latency_s), Us(e.bandwidth_s));
  out += fmt::format("algbw:      {} GB/s (size / time)\n", GBps(e.algbw_bytes_per_s));
  out += fmt::format("busbw:      {} GB/s (algbw x {} = {:.4g}, nccl-tests' convention)\n",
                     GBps(e.busbw_bytes_per_s), FactorText(e.collective), e.busbw_factor);
  for (const auto& u : e.links) {
    if (u.link == e.bottleneck) {
      out += fmt::format("bottleneck: {} ({}), {} GB/s achieved per GPU per direction\n",
                         cluster::LinkClassName(u.link), cluster::LinkClassTitle(u.link),
                         GBps(u.bytes_per_s));
    }
  }
  if (r.overrides.bytes_per_s || r.overrides.step_latency_s) {
    std::vector<std::string> o;
    if (r.overrides.bytes_per_s)
      o.push_back(
          fmt::format("--bandwidth {:g} GB/s on every link", *r.overrides.bytes_per_s / 1e9));
    if (r.overrides.step_latency_s) {
      o.push_back(fmt::format("--latency {:g} us per step, no base latency, Simple protocol only",
                              *r.overrides.step_latency_s * 1e6));
    }
    out += fmt::format("overrides:  {}\n", fmt::join(o, "; "));
  }
  out +=
      "units: GB/s = 1e9 bytes/s; us = microseconds\n\nbytes each GPU sends per link class "
      "(averaged over the group):\n";
  TextTable links(
      {"link", "bytes per GPU", "achieved GB/s", "steps", "latency us", "bandwidth us"});
  links.SetAlign(1, TextTable::Align::kRight);
  for (const auto& u : e.links) {
    links.AddRow({std::string(cluster::LinkClassName(u.link)), BytesText(u.bytes_per_gpu),
                  GBps(u.bytes_per_s), std::to_string(u.steps), Us(u.latency_s),
                  Us(u.bandwidth_s)});
  }
  out += links.Render();
  out += "\nalgorithms considered:\n";
  TextTable alts({"algorithm", "protocol", "time us", "algbw GB/s", "busbw GB/s", "bottleneck"});
  alts.SetAlign(1, TextTable::Align::kLeft);
  alts.SetAlign(5, TextTable::Align::kLeft);
  for (const auto& a : all) {
    alts.AddRow({std::string(collective::AlgorithmName(a.algorithm)),
                 std::string(collective::ProtocolName(a.protocol)), Us(a.time_s),
                 GBps(a.algbw_bytes_per_s), GBps(a.busbw_bytes_per_s),
                 std::string(cluster::LinkClassName(a.bottleneck))});
  }
  return out + alts.Render();
}

void JsonOf(JsonWriter& w, const cluster::Cluster& c, const CommTarget& t,
            const std::vector<Estimate>& all, const collective::Request& r) {
  const Estimate& e = all.front();
  w.BeginObject();
  w.Field("cluster", c.name).Field("nodes", c.num_nodes).Field("gpus", c.num_gpus());
  w.Field("collective", collective::CollectiveName(e.collective)).Field("size_bytes", e.size_bytes);
  w.Field("group", t.kind).Field("group_index", t.group_index).Field("groups", t.groups);
  w.Field("ranks", e.ranks).Field("group_nodes", e.nodes);
  w.Field("first_rank", t.ranks.front()).Field("last_rank", t.ranks.back());
  if (t.ranks.size() <= kMaxListedRanks) {
    w.Key("group_ranks").BeginArray();
    for (int64_t x : t.ranks) w.Int(x);
    w.EndArray();
  }
  w.Field("algorithm", collective::AlgorithmName(e.algorithm))
      .Field("protocol", collective::ProtocolName(e.protocol));
  w.Field("time_us", e.time_s * 1e6)
      .Field("latency_us", e.latency_s * 1e6)
      .Field("bandwidth_us", e.bandwidth_s * 1e6);
  w.Field("algbw_GBps", e.algbw_bytes_per_s / 1e9).Field("busbw_GBps", e.busbw_bytes_per_s / 1e9);
  w.Field("busbw_factor", e.busbw_factor);
  w.Field("bottleneck_link", cluster::LinkClassName(e.bottleneck));
  w.Key("bytes_per_link").BeginObject();
  for (const auto& u : e.links) w.Field(cluster::LinkClassName(u.link), u.bytes_per_gpu);
  w.EndObject();
  w.Key("links").BeginArray();
  for (const auto& u : e.links) {
    w.BeginObject();
    w.Field("link", cluster::LinkClassName(u.link)).Field("bytes_per_gpu", u.bytes_per_gpu);
    w.Field("achieved_GBps", u.bytes_per_s / 1e9).Field("steps", u.steps);
    w.Field("latency_us", u.latency_s * 1e6).Field("bandwidth_us", u.bandwidth_s * 1e6);
    w.EndObject();
  }
  w.EndArray();
  w.Key("candidates").BeginArray();
  for (const auto& a : all) {
    w.BeginObject();
    w.Field("algorithm", collective::AlgorithmName(a.algorithm))
        .Field("protocol", collective::ProtocolName(a.protocol));
    w.Field("time_us", a.time_s * 1e6).Field("algbw_GBps", a.algbw_bytes_per_s / 1e9);
    w.Field("busbw_GBps", a.busbw_bytes_per_s / 1e9)
        .Field("bottleneck_link", cluster::LinkClassName(a.bottleneck));
    w.EndObject();
  }
  w.EndArray();
  w.Key("overrides").BeginObject();
  w.Key("bandwidth_GBps");
  r.overrides.bytes_per_s ? w.Number(*r.overrides.bytes_per_s / 1e9) : w.Null();
  w.Key("latency_us");
  r.overrides.step_latency_s ? w.Number(*r.overrides.step_latency_s * 1e6) : w.Null();
  w.EndObject();
  w.Field("units", "GBps = 1e9 bytes/s; us = microseconds; bytes per GPU averaged over the group");
  w.EndObject();
}

}  // namespace

void CommQuery::Register(FlagSink& flags) {
  flags.String("--collective", &collective,
               "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast or send_recv");
  flags.String("--size", &size,
               "message size (nccl-tests' S): B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB "
               "(powers of 1024)");
  flags.String("--group", &group,
               "measure the groups of one kind (tp, cp, ep, dp, edp, pp): the slowest of them");
  flags.Int("--ranks", &ranks, "measure ranks 0..N-1 instead; 0 = every GPU when no --group");
  flags.String("--algorithm", &algorithm,
               "auto, ring, multi-rail, tree, hierarchical, pairwise, direct or nvls");
  flags.Double("--bandwidth", &bandwidth_gbps,
               "GB/s per GPU per direction on every link (1 GB/s = 1e9 bytes/s); 0 = the cluster's "
               "achieved figures");
  flags.Double("--latency", &latency_us,
               "microseconds per step on every link; drops NCCL's base latency and protocols "
               "(textbook alpha-beta)");
}

StatusOr<CommResult> ComputeComm(const CommQuery& q, const GivenFn& given, const StopFn& stop) {
  CommResult out;
  collective::Request& request = out.request;
  ASSIGN_OR_RETURN(request.collective, collective::ParseCollective(q.collective));
  ASSIGN_OR_RETURN(request.algorithm, collective::ParseAlgorithm(q.algorithm));
  auto size = ParseBytes(q.size);
  if (!size.ok()) return InvalidArgument("--" + size.status().message());
  request.size_bytes = *size;
  if (given("--bandwidth")) {
    // At least 1 MB/s: 1e-310 GB/s passed "> 0" and made every time infinite (issue 26).
    constexpr double kMinGbps = 1e-3;
    if (!(q.bandwidth_gbps >= kMinGbps && q.bandwidth_gbps <= cluster::kMaxBytesPerS / 1e9)) {
      return InvalidArgument(fmt::format("--bandwidth {:g}: must be {:g} to {:g} GB/s",
                                         q.bandwidth_gbps, kMinGbps, cluster::kMaxBytesPerS / 1e9));
    }
    request.overrides.bytes_per_s = q.bandwidth_gbps * 1e9;
  }
  if (given("--latency")) {
    if (!(q.latency_us >= 0 && q.latency_us <= 1e6)) {
      return InvalidArgument(
          fmt::format("--latency {:g}: must be 0..1000000 microseconds", q.latency_us));
    }
    request.overrides.step_latency_s = q.latency_us * 1e-6;
  }
  if (given("--group") && given("--ranks")) {
    return InvalidArgument("--group and --ranks: give one or the other");
  }
  ASSIGN_OR_RETURN(out.cluster, q.cluster.Load(given));
  const cluster::Cluster& c = out.cluster;
  CommTarget& target = out.target;
  std::vector<Estimate>& best = out.estimates;
  if (!q.group.empty()) {
    ASSIGN_OR_RETURN(cluster::Placement p, q.cluster.Place(c));
    auto kind = cluster::FindGroupKind(p, q.group);
    if (!kind.ok()) {
      return InvalidArgument(fmt::format("{}; set its degree (placement {})",
                                         kind.status().message(),
                                         cluster::MegatronDegreesString(p)));
    }
    target.kind = kind->name;
    target.groups = p.NumSetGroups(kind->axes);
    // Every group of the kind communicates at once; the slowest sets the step's time.
    std::vector<int64_t> members;
    for (int64_t g = 0; g < target.groups; ++g) {
      if (stop && stop()) return ResourceExhausted("stopped before every group was estimated");
      p.SetGroupRanks(kind->axes, g, &members);
      ASSIGN_OR_RETURN(std::vector<Estimate> all,
                       collective::EstimateAlgorithms(c, members, request));
      if (best.empty() || all.front().time_s > best.front().time_s) {
        best = std::move(all);
        target.ranks = members;
        target.group_index = g;
      }
    }
  } else {
    if (ClusterFlags::AnyDegree(given))
      return InvalidArgument("degrees (--tp ...) place a job; pick one of its groups with --group");
    // No placement is made for --ranks, but a bad --order is still an error, not ignored.
    if (given("--order")) {
      RETURN_IF_ERROR(cluster::Placement::Make(cluster::Degrees{}, q.cluster.order, 1).status());
    }
    const int64_t n = q.ranks == 0 ? c.num_gpus() : q.ranks;
    if (q.ranks < 0 || n < 2 || n > c.num_gpus()) {
      return InvalidArgument(
          fmt::format("--ranks {}: must be 2..{} (the cluster's GPUs; --nodes adds more)", q.ranks,
                      c.num_gpus()));
    }
    target.kind = "ranks";
    target.ranks.resize(n);
    for (int64_t i = 0; i < n; ++i) target.ranks[i] = i;
    ASSIGN_OR_RETURN(best, collective::EstimateAlgorithms(c, target.ranks, request));
  }
  // Every input is bounded so that this cannot happen; if it does, it is an error naming them,
  // never "inf us" printed with exit 0.
  for (const Estimate& e : best) {
    if (!std::isfinite(e.time_s)) {
      return InvalidArgument(fmt::format(
          "--size {} on {} ranks{}: the estimated time is not a finite number; give a larger "
          "--bandwidth or a smaller --size",
          q.size, target.ranks.size(),
          given("--bandwidth") ? fmt::format(" at --bandwidth {:g} GB/s", q.bandwidth_gbps)
                               : std::string()));
    }
  }
  return out;
}

std::string CommJson(const CommResult& r, int indent) {
  JsonWriter w(indent);
  JsonOf(w, r.cluster, r.target, r.estimates, r.request);
  return w.str();
}

std::string CommText(const CommResult& r) {
  return TextOf(r.cluster, r.target, r.estimates, r.request);
}

const Command& CommCommand() {
  static const Command kCommand = MakeCommand<CommQuery, CommResult>(
      {.name = "comm",
       .summary = "time, algbw and busbw of one collective on a group, and the link that bounds it",
       .usage = "infralens comm [--cluster PRESET|FILE.toml] [--nodes N] --collective C --size S "
                "(--group AXIS [degrees] | --ranks N) [--algorithm A] [--bandwidth GBps] "
                "[--latency us] [--json]",
       .examples = {"infralens comm --cluster dgx-h100 --nodes 1 --collective all_reduce --size "
                    "1GiB --ranks 8",
                    "infralens comm --cluster dgx-h100 --nodes 1 --ranks 8 --algorithm ring "
                    "--bandwidth 450 --latency 5",
                    "infralens comm --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --dp 4 --group dp "
                    "--size 512MiB",
                    "infralens comm --cluster dgx-h100 --nodes 8 --tp 8 --pp 2 --group pp "
                    "--collective send_recv --size 64MiB",
                    "infralens comm --cluster dgx-h100 --nodes 2 --ranks 16 --size 8KiB --json",
                    "infralens comm --cluster mi300x --tp 2 --dp 4 --group tp --collective "
                    "all_gather --size 256MB"},
       .formats = {"table", "json"}},
      [](CommQuery& q, FlagSink& flags) {
        q.cluster.Register(flags);
        q.Register(flags);
      },
      [](const CommQuery& q, const RunContext& ctx) {
        CommQuery run = q;
        run.cluster.files_allowed = ctx.files_allowed;
        return ComputeComm(run, ctx.given, ctx.stop);
      },
      JsonOrText<CommQuery>(CommJson, CommText));
  return kCommand;
}

}  // namespace infralens::request
