#include "plan/comm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "base/enum_names.h"

namespace infralens::plan {

using cluster::Axis;
using collective::Collective;

constexpr EnumName<Overlap> kOverlapNames[] = {
    {Overlap::kNo, "no"}, {Overlap::kPartly, "partly"}, {Overlap::kYes, "yes"}};

const char* OverlapName(Overlap o) { return NameIn(kOverlapNames, o); }

const char* CommItemKindName(CommItemKind k) {
  switch (k) {
    case CommItemKind::kTpAllReduce:
      return "tp_all_reduce";
    case CommItemKind::kTpSpAllGather:
      return "tp_sp_all_gather";
    case CommItemKind::kTpSpAllGatherFp8:
      return "tp_sp_all_gather_fp8";
    case CommItemKind::kTpSpReduceScatter:
      return "tp_sp_reduce_scatter";
    case CommItemKind::kTpSpGatherLatents:
      return "tp_sp_all_gather_latents";
    case CommItemKind::kTpSpScatterLatents:
      return "tp_sp_reduce_scatter_latents";
    case CommItemKind::kTpSpRegatherLatents:
      return "tp_sp_all_gather_latents_again";
    case CommItemKind::kTpSpWeightGradAllReduce:
      return "tp_sp_weight_grad_all_reduce";
    case CommItemKind::kCpRingForward:
      return "cp_ring_forward";
    case CommItemKind::kCpRingBackward:
      return "cp_ring_backward";
    case CommItemKind::kCpGradRing:
      return "cp_grad_ring";
    case CommItemKind::kEpAllToAll:
      return "ep_all_to_all";
    case CommItemKind::kPpSendRecv:
      return "pp_send_recv";
    case CommItemKind::kTiedEmbeddingReduce:
      return "tied_embedding_all_reduce";
    case CommItemKind::kDpGradAllReduce:
      return "dp_grad_all_reduce";
    case CommItemKind::kDpGradReduceScatter:
      return "dp_grad_reduce_scatter";
    case CommItemKind::kDpParamAllGather:
      return "dp_param_all_gather";
    case CommItemKind::kFsdpGatherForward:
      return "fsdp_all_gather_forward";
    case CommItemKind::kFsdpGatherBackward:
      return "fsdp_all_gather_backward";
    case CommItemKind::kFsdpReduceScatter:
      return "fsdp_reduce_scatter";
  }
  return "?";
}

const char* CommItemFamily(CommItemKind k) {
  switch (k) {
    case CommItemKind::kTpAllReduce:
    case CommItemKind::kTpSpAllGather:
    case CommItemKind::kTpSpAllGatherFp8:
    case CommItemKind::kTpSpReduceScatter:
    case CommItemKind::kTpSpGatherLatents:
    case CommItemKind::kTpSpScatterLatents:
    case CommItemKind::kTpSpRegatherLatents:
    case CommItemKind::kTpSpWeightGradAllReduce:
      return "TP";
    case CommItemKind::kCpRingForward:
    case CommItemKind::kCpRingBackward:
    case CommItemKind::kCpGradRing:
      return "CP";
    case CommItemKind::kEpAllToAll:
      return "EP";
    case CommItemKind::kPpSendRecv:
    case CommItemKind::kTiedEmbeddingReduce:
      return "PP";
    case CommItemKind::kDpGradAllReduce:
    case CommItemKind::kDpGradReduceScatter:
    case CommItemKind::kDpParamAllGather:
      return "DP";
    case CommItemKind::kFsdpGatherForward:
    case CommItemKind::kFsdpGatherBackward:
    case CommItemKind::kFsdpReduceScatter:
      return "FSDP";
  }
  return "?";
}

StatusOr<cluster::Placement> PlaceJob(const ParallelConfig& p, const std::string& order,
                                      int64_t world_size) {
  const int64_t gpus = int64_t{p.tp} * p.pp * p.dp * p.cp;
  if (gpus != world_size) {
    return InvalidArgument(
        fmt::format("tp={} pp={} dp={} cp={} use {} GPUs, but the cluster has {}", p.tp, p.pp, p.dp,
                    p.cp, gpus, world_size));
  }
  if (p.ep < 1 || p.dp % p.ep != 0) {
    return InvalidArgument(
        fmt::format("‹ep› {}: must divide dp = {} to place the job (expert-parallel groups are "
                    "carved out of the "
                    "data-parallel ranks, as Megatron does)",
                    p.ep, p.dp));
  }
  cluster::Degrees d;
  d[Axis::kTp] = p.tp;
  d[Axis::kCp] = p.cp;
  d[Axis::kEp] = p.ep;
  d[Axis::kDp] = p.dp / p.ep;
  d[Axis::kPp] = p.pp;
  return cluster::Placement::Make(d, order, world_size);
}

namespace {

// Activations and parameters travel in BF16 (Megatron keeps TP, CP, EP and PP traffic in BF16
// under FP8 training too; Transformer Engine casts inside the GEMMs), but for the SP all-gathers a
// framework casts to FP8 before it gathers (CommPlanConfig::sp_gathers_fp8_*).
constexpr double kActivationBytes = kBf16Bytes;
constexpr double kParamBytes = kBf16Bytes;

class Builder {
 public:
  Builder(const cluster::Cluster& c, const cluster::Placement& p, const collective::Overrides& o)
      : c_(c), p_(p), overrides_(o) {}

  // Adds one item for the group kind spanning `axes`, measured on its slowest group.
  Status Add(CommItemKind kind, CommItem item, const std::vector<Axis>& axes) {
    const std::vector<int64_t> ranks = SlowestGroup(item.group, axes);
    return AddOnRanks(kind, std::move(item), ranks);
  }

  // One `collective` of `bytes` alone on the slowest group of the kind `key` spanning `axes`.
  StatusOr<collective::Estimate> Estimate(const std::string& key, const std::vector<Axis>& axes,
                                          Collective collective, double bytes) {
    const std::vector<int64_t> ranks = SlowestGroup(key, axes);
    if (ranks.size() < 2) return collective::Estimate{};
    return EstimateOn(ranks, collective, bytes);
  }

  Status AddOnRanks(CommItemKind kind, CommItem item, const std::vector<int64_t>& ranks) {
    item.kind = kind;
    if (ranks.size() < 2 || item.count == 0) return Status::Ok();
    ASSIGN_OR_RETURN(item.estimate, EstimateOn(ranks, item.collective, item.message_bytes));
    item.group_size = static_cast<int>(ranks.size());
    item.link = cluster::ClassifyGroup(c_, ranks).link;
    item.time_per_step_s = static_cast<double>(item.count) * item.estimate.time_s;
    items_.push_back(std::move(item));
    return Status::Ok();
  }

  // The EP dispatch (or combine) of CommPlanConfig::hierarchical_ep_dispatch on the slowest EP
  // group: its ranks split by node (the scale-up domain); the scale-out stage is an all-to-all
  // among the group's ranks of one local index (one per node) carrying each token once per
  // target node, the NVLink stage an all-to-all inside the node carrying it once per target GPU.
  // With nccl-tests' S (the bytes one rank sends, its own share included), a token of
  // `token_bytes` adds token_bytes x (expected distinct target nodes) to the first and
  // token_bytes x (expected distinct target GPUs) to the second (model::ExpectedRoutedBins).
  // DeepEP runs the RDMA senders, the NVLink forwarders and the receivers at once (its
  // internode.cu warp roles), so a call takes the slower stage. Sets *added false (and adds
  // nothing) where the experts do not split over the nodes.
  Status AddHierarchicalDispatch(const model::Model& m, double token_bytes, int64_t calls,
                                 const std::string& freq, Overlap overlap, const std::string& note,
                                 bool* added) {
    *added = false;
    const std::vector<int64_t> ranks = SlowestGroup("ep", {Axis::kEp});
    std::map<int, std::vector<int64_t>> by_node;
    for (int64_t r : ranks) by_node[c_.NodeOf(r)].push_back(r);
    const int64_t nodes = static_cast<int64_t>(by_node.size());
    const double node_targets = model::ExpectedRoutedBins(m, nodes);
    const double gpu_targets = model::ExpectedRoutedBins(m, static_cast<int64_t>(ranks.size()));
    if (!(node_targets > 0) || !(gpu_targets > 0)) return Status::Ok();
    std::vector<int64_t> rail, intra = by_node.begin()->second;
    for (const auto& [node, members] : by_node) rail.push_back(members.front());
    collective::Estimate slowest;
    double slowest_bytes = 0;
    for (const auto& [group, targets] :
         {std::pair{&rail, node_targets}, std::pair{&intra, gpu_targets}}) {
      if (group->size() < 2) continue;
      ASSIGN_OR_RETURN(collective::Estimate e,
                       EstimateOn(*group, Collective::kAllToAll, token_bytes * targets));
      if (e.time_s > slowest.time_s) {
        slowest = e;
        slowest_bytes = token_bytes * targets;
      }
    }
    CommItem item{
        "EP dispatch and combine of routed tokens, hierarchical (DeepEP): once per "
        "target node over scale-out, once per target GPU inside it",
        "ep",
        Collective::kAllToAll,
        freq,
        static_cast<int>(ranks.size()),
        slowest_bytes,
        calls,
        cluster::ClassifyGroup(c_, ranks).link,
        slowest,
        static_cast<double>(calls) * slowest.time_s,
        overlap,
        fmt::format("{} {:.2f} target nodes and {:.2f} target GPUs per token; {}",
                    nodes > 1 ? "across nodes:" : "inside one node:", node_targets, gpu_targets,
                    note),
        CommItemKind::kEpAllToAll};
    items_.push_back(std::move(item));
    *added = true;
    return Status::Ok();
  }

  std::vector<CommItem> Take() { return std::move(items_); }

 private:
  // The ranks of the slowest group of the kind `key` spanning `axes` (its links classified once).
  std::vector<int64_t> SlowestGroup(const std::string& key, const std::vector<Axis>& axes) {
    auto it = links_.find(key);
    if (it == links_.end()) {
      it = links_.emplace(key, cluster::ClassifyAxisSet(c_, p_, cluster::AxisSet{key, axes})).first;
    }
    std::vector<int64_t> ranks;
    p_.GroupRanksOver(axes, it->second.worst_base_rank, &ranks);
    return ranks;
  }

  // One `collective` of `bytes` (at least 1) on `ranks`.
  StatusOr<collective::Estimate> EstimateOn(const std::vector<int64_t>& ranks,
                                            Collective collective, double bytes) const {
    collective::Request req;
    req.collective = collective;
    req.size_bytes = std::max<int64_t>(1, std::llround(bytes));
    req.overrides = overrides_;
    return collective::EstimateCollective(c_, ranks, req);
  }

  const cluster::Cluster& c_;
  const cluster::Placement& p_;
  collective::Overrides overrides_;
  std::map<std::string, cluster::AxisLinks> links_;
  std::vector<CommItem> items_;
};

// The group dense weights reduce over: every data-parallel rank, with the context-parallel ranks
// (Megatron reduces gradients over its intra_dp_cp group); its kind's name and axes.
std::pair<std::string, std::vector<Axis>> DenseDataParallelGroup(const ParallelConfig& par) {
  if (par.cp > 1) return {"dp+cp", {Axis::kDp, Axis::kEp, Axis::kCp}};
  return {"dp", {Axis::kDp, Axis::kEp}};
}

}  // namespace

StatusOr<CommPlan> BuildCommPlan(const model::Model& m, const cluster::Cluster& c,
                                 const CommPlanConfig& cfg) {
  MemoryConfig job = cfg.job;
  job.hbm_bytes = 0;
  ASSIGN_OR_RETURN(MemoryReport rep, EstimateMemory(m, job));
  const ParallelConfig& par = job.parallel;
  ASSIGN_OR_RETURN(cluster::Placement placement, PlaceJob(par, cfg.order, c.num_gpus()));

  CommPlan plan;
  plan.microbatches = rep.microbatches;
  plan.vpp = rep.vpp;
  // The pipeline rank with the most layers (then parameters) issues the most per-layer traffic.
  const RankMemory* worst = &rep.ranks.front();
  for (const RankMemory& r : rep.ranks) {
    if (r.layers > worst->layers || (r.layers == worst->layers && r.parameters > worst->parameters))
      worst = &r;
  }
  plan.rank = worst->rank;
  plan.layers = worst->layers;
  plan.moe_layers = worst->moe_layers;
  double max_dense_params = 0, max_expert_params = 0;
  // The bytes the distributed optimizer all-gathers per parameter: BF16, but the transformer
  // layers' FP8 weights in FP8 where they are the parameters (MemoryConfig::fp8_param_gather:
  // Megatron-Core's param buffers hold the FP8 data then, distributed/param_and_grad_buffer.py,
  // and --fp8-param-gather is named for it). The rank with the most bytes sets the message.
  const bool fp8_params = Fp8Parameters(job);
  const double layer_gather_b = fp8_params ? kFp8Bytes : kParamBytes;
  double max_dense_gather_bytes = 0, max_expert_gather_bytes = 0;
  for (const RankMemory& r : rep.ranks) {
    max_dense_params = std::max(max_dense_params, r.parameters - r.expert_parameters);
    max_expert_params = std::max(max_expert_params, r.expert_parameters);
    const double dense_layer = r.layer_parameters - r.expert_parameters;
    max_dense_gather_bytes =
        std::max(max_dense_gather_bytes,
                 dense_layer * layer_gather_b + (r.parameters - r.layer_parameters) * kParamBytes);
    max_expert_gather_bytes =
        std::max(max_expert_gather_bytes, r.expert_parameters * layer_gather_b);
  }
  // BF16 throughout unless FP8 parameters are gathered (exactly kParamBytes then).
  auto per_param = [&](double bytes, double params) {
    return fp8_params && params > 0 ? bytes / params : kParamBytes;
  };

  const int64_t mb = plan.microbatches;
  const int64_t L = plan.layers, M = plan.moe_layers;
  const int tp = par.tp, cp = par.cp, ep = par.ep, pp = par.pp;
  const int dp = par.dp;
  const bool sp = par.sequence_parallel && tp > 1;
  const bool full = job.recompute == model::Recompute::kFull;
  // Tokens of one microbatch on one context-parallel rank, and its hidden-state tensor.
  const double tokens =
      static_cast<double>(job.micro_batch) * static_cast<double>(rep.seq_len) / cp;
  const double act_bytes = tokens * static_cast<double>(m.hidden) * kActivationBytes;
  const double grad_bytes = job.fp32_gradients ? 4 : 2;
  // Full recomputation re-runs each layer's forward, collectives included (Korthikanti et al.
  // 2022, sec. 5: selective recomputation repeats no communication).
  const int64_t fwd_per_layer = full ? 4 : 2;  // per layer per microbatch, forward + recomputed
  const std::string recompute_note = full ? ", 2 more to recompute" : "";

  Builder b(c, placement, cfg.overrides);
  // Tensor parallelism (Shoeybi et al. 2019, sec. 3): an all-reduce after attention and after the
  // MLP in forward, and their conjugates in backward. Sequence parallelism (Korthikanti et al.
  // 2022, sec. 4.2.2) replaces each all-reduce by an all-gather and a reduce-scatter.
  if (tp > 1) {
    const int64_t calls = L * mb * (fwd_per_layer + 2);
    const std::string freq = fmt::format("{} per layer per microbatch (2 forward, 2 backward{})",
                                         fwd_per_layer + 2, recompute_note);
    // What the planner hides (planner.cc CostOfLayer): under TP overlap each collective in steps
    // behind the GEMMs it feeds or drains; with SP's backward re-gather (below), the
    // gathered-again inputs under the dgrad GEMMs and the backward's reduce-scatters under the
    // wgrad GEMMs.
    const bool regather = sp && cfg.sp_backward_regather;
    const Overlap overlap = cfg.tp_overlap || regather ? Overlap::kPartly : Overlap::kNo;
    const std::string note =
        cfg.tp_overlap ? "split into steps hidden behind the GEMMs each feeds or drains (TP "
                         "overlap); the planner charges what stays exposed"
        : regather     ? "the forward's on the critical path; in the backward, the inputs "
                         "gathered again hide under the dgrad GEMMs and the reduce-scatters under "
                         "the wgrad GEMMs"
                       : "on the critical path: each layer waits for it";
    // The TP collectives differ only in their kind, name and collective.
    const auto add_tp = [&](CommItemKind kind, const char* name, Collective collective,
                            const std::string& frequency, int64_t count, double bytes) {
      return b.Add(kind,
                   {name, "tp", collective, frequency, 0, bytes, count, {}, {}, 0, overlap, note},
                   {Axis::kTp});
    };
    if (!sp) {
      RETURN_IF_ERROR(add_tp(CommItemKind::kTpAllReduce,
                             "TP all-reduce of attention and MLP outputs", Collective::kAllReduce,
                             freq, calls, act_bytes));
    } else {
      // Megatron-Core and Transformer Engine keep the column-parallel linears' inputs sharded and
      // gather them again in the backward for the wgrad GEMM (CommPlanConfig::
      // sp_backward_regather): one more all-gather per qkv and per dense MLP's fc1 (MLA's up
      // projections gather their latents again: their own item below).
      const int64_t regathers =
          cfg.sp_backward_regather ? mb * ((m.is_mla() ? 0 : L) + (L - M)) : 0;
      // MLA (model::MlaSequenceParallelGatherWidth): the attention's forward all-gathers (and a
      // full recompute's) carry the latents rather than the hidden state, and the backward
      // reduce-scatters their gradients at the same width; the MLP's calls and the backward's
      // all-gathers of the projection's output gradient stay h wide.
      const bool latents = m.is_mla();
      const int64_t latent_gathers = latents ? L * mb * fwd_per_layer / 2 : 0;
      const int64_t latent_scatters = latents ? L * mb : 0;
      const std::string h_gather_freq =
          latents ? fmt::format("{} per layer per microbatch (the MLP's forward{}, 2 backward)",
                                fwd_per_layer / 2 + 2, full ? ", again to recompute" : "")
                  : freq;
      const std::string h_scatter_freq =
          latents ? fmt::format("{} per layer per microbatch (2 forward{}, the MLP's backward)",
                                fwd_per_layer + 1, recompute_note)
                  : freq;
      // FP8 training gathers some of them in FP8 (CommPlanConfig::sp_gathers_fp8_*): the
      // forward's (and a full recompute's) 2 or 4 per layer, the backward's 2 and the regathers.
      const int64_t forward_gathers = L * mb * fwd_per_layer - latent_gathers;
      const int64_t backward_gathers = L * mb * 2;
      const std::string ag_freq =
          regathers == 0 ? h_gather_freq
                         : fmt::format(
                               "{} per microbatch ({} per layer: {}; and {} gathered again for the "
                               "wgrad GEMMs)",
                               (forward_gathers + backward_gathers + regathers) / mb,
                               (forward_gathers + backward_gathers) / (L * mb),
                               latents ? "the MLP's forward, 2 backward"
                                       : "2 forward, 2 backward" + recompute_note,
                               regathers / mb);
      const int64_t fp8_gathers = (cfg.sp_gathers_fp8_forward ? forward_gathers : 0) +
                                  (cfg.sp_gathers_fp8_backward ? backward_gathers + regathers : 0);
      if (const int64_t bf16_gathers = forward_gathers + backward_gathers + regathers - fp8_gathers;
          bf16_gathers > 0) {
        RETURN_IF_ERROR(add_tp(CommItemKind::kTpSpAllGather,
                               "TP+SP all-gather of the layer norm outputs", Collective::kAllGather,
                               fp8_gathers == 0
                                   ? ag_freq
                                   : fmt::format("{} per microbatch in BF16", bf16_gathers / mb),
                               bf16_gathers, act_bytes));
      }
      if (fp8_gathers > 0) {
        const std::string which = !cfg.sp_gathers_fp8_backward
                                      ? fmt::format("the forward's ({} per layer)", fwd_per_layer)
                                  : !cfg.sp_gathers_fp8_forward ? std::string("the backward's")
                                                                : std::string("all of them");
        RETURN_IF_ERROR(add_tp(
            CommItemKind::kTpSpAllGatherFp8, "TP+SP all-gather of FP8 inputs and gradients",
            Collective::kAllGather, fmt::format("{} per microbatch: {}", fp8_gathers / mb, which),
            fp8_gathers, act_bytes * kFp8Bytes / kActivationBytes));
      }
      RETURN_IF_ERROR(add_tp(
          CommItemKind::kTpSpReduceScatter, "TP+SP reduce-scatter of attention and MLP outputs",
          Collective::kReduceScatter, h_scatter_freq, calls - latent_scatters, act_bytes));
      if (latents) {
        // One item of the three calls' summed width (q, kv, the RoPE key): an alpha-beta call's
        // time is linear in its bytes, so only two latencies per layer are left out.
        const double latent_bytes =
            tokens * static_cast<double>(model::MlaSequenceParallelGatherWidth(m));
        RETURN_IF_ERROR(
            add_tp(CommItemKind::kTpSpGatherLatents,
                   "TP+SP all-gather of MLA's latents (query, key-value, RoPE key)",
                   Collective::kAllGather,
                   fmt::format("{} per layer per microbatch (the attention's forward{}), in {}",
                               fwd_per_layer / 2, full ? " and its recompute" : "",
                               cfg.sp_gathers_fp8_forward ? "FP8" : "BF16"),
                   latent_gathers,
                   latent_bytes * (cfg.sp_gathers_fp8_forward ? kFp8Bytes : kActivationBytes)));
        RETURN_IF_ERROR(add_tp(CommItemKind::kTpSpScatterLatents,
                               "TP+SP reduce-scatter of the gradients of MLA's latents",
                               Collective::kReduceScatter, "1 per layer per microbatch (backward)",
                               latent_scatters, latent_bytes * kActivationBytes));
        if (cfg.sp_backward_regather) {
          // Transformer Engine's up projections gather their latent inputs again for the wgrad
          // GEMMs (model::MlaSequenceParallelRegatherWidth), in FP8 where the backward's are.
          RETURN_IF_ERROR(add_tp(
              CommItemKind::kTpSpRegatherLatents,
              "TP+SP all-gather of MLA's latents again for the wgrad GEMMs", Collective::kAllGather,
              fmt::format("1 per layer per microbatch (backward: the query and key-value latents), "
                          "in {}",
                          cfg.sp_gathers_fp8_backward ? "FP8" : "BF16"),
              L * mb,
              tokens * static_cast<double>(model::MlaSequenceParallelRegatherWidth(m)) *
                  (cfg.sp_gathers_fp8_backward ? kFp8Bytes : kActivationBytes)));
        }
      }
      // The weights each rank applies to its own sequence shard (the norms, MLA's duplicated down
      // projections: model::SequenceParallelLayerParams) have partial gradients, summed over TP
      // once per step after the last backward, in the gradients' dtype, before the
      // data-parallel reduction of the optimizer step.
      RETURN_IF_ERROR(
          b.Add(CommItemKind::kTpSpWeightGradAllReduce,
                {latents ? "TP+SP all-reduce of norm and MLA down-projection gradients"
                         : "TP+SP all-reduce of norm gradients",
                 "tp",
                 Collective::kAllReduce,
                 "once per step",
                 0,
                 static_cast<double>(L) *
                     static_cast<double>(model::SequenceParallelLayerParams(m)) * grad_bytes,
                 1,
                 {},
                 {},
                 0,
                 Overlap::kNo,
                 "after the last backward (Megatron-Core finalize_model_grads.py)"},
                {Axis::kTp}));
    }
  }
  // Context parallelism (Megatron-LM / Transformer Engine ring attention): cp-1 steps per layer
  // pass this rank's K and V to its neighbour in forward; backward passes K, V and their gradients.
  // PyTorch's context_parallel (CommPlanConfig::cp_all_gather) all-gathers K and V instead and
  // passes only the gradients around the ring, in FP32.
  if (cp > 1) {
    const double kv_heads = m.is_mla() || cfg.cp_kv_repeated ? static_cast<double>(m.num_heads)
                                                             : static_cast<double>(m.num_kv_heads);
    const double kv_width =
        kv_heads * static_cast<double>(model::QkHeadDim(m) + model::VHeadDim(m)) / tp;
    const double kv_bytes = tokens * kv_width * kActivationBytes;
    // Every CP item (as add_tp for TP's): this rank's group, its overlap and why.
    const auto add_cp = [&](CommItemKind kind, const char* name, Collective collective,
                            const std::string& frequency, int64_t count, double bytes,
                            Overlap overlap, const char* note) {
      return b.Add(kind,
                   {name, "cp", collective, frequency, 0, bytes, count, {}, {}, 0, overlap, note},
                   {Axis::kCp});
    };
    if (cfg.cp_all_gather) {
      // nccl-tests' S of an all-gather is its output: every rank's K and V.
      const double gathered = kv_bytes * cp;
      RETURN_IF_ERROR(add_cp(CommItemKind::kCpRingForward, "CP all-gather of K and V (forward)",
                             Collective::kAllGather,
                             fmt::format("{} per layer per microbatch{}", full ? 2 : 1,
                                         full ? " (again to recompute)" : ""),
                             L * mb * (full ? 2 : 1), gathered, Overlap::kPartly,
                             "issued before the first block's attention, waited after it (PyTorch "
                             "_AllGatherRotater)"));
      RETURN_IF_ERROR(add_cp(CommItemKind::kCpRingBackward,
                             "CP all-gather of K and V again (backward)", Collective::kAllGather,
                             "1 per layer per microbatch", L * mb, gathered, Overlap::kPartly,
                             "issued before the first block's backward, waited after it"));
      // The gradients of K and V accumulate in FP32 (convert_to_f32): twice K and V's BF16 bytes,
      // one send per block, the last waited after the last block.
      RETURN_IF_ERROR(add_cp(
          CommItemKind::kCpGradRing, "CP ring pass of the K and V gradients in FP32 (backward)",
          Collective::kSendRecv, fmt::format("{} per layer per microbatch (one per block)", cp),
          L * mb * cp, 2 * kv_bytes, Overlap::kPartly,
          "each behind the next block's backward, the last after the last block"));
    } else {
      const char* note = "hidden behind the attention of the block already received";
      RETURN_IF_ERROR(
          add_cp(CommItemKind::kCpRingForward, "CP ring exchange of K and V (forward)",
                 Collective::kSendRecv,
                 fmt::format("{} per layer per microbatch (cp-1 ring steps{})",
                             (cp - 1) * (full ? 2 : 1), full ? ", again to recompute" : ""),
                 L * mb * (cp - 1) * (full ? 2 : 1), kv_bytes, Overlap::kYes, note));
      RETURN_IF_ERROR(add_cp(CommItemKind::kCpRingBackward,
                             "CP ring exchange of K, V and their gradients (backward)",
                             Collective::kSendRecv,
                             fmt::format("{} per layer per microbatch (cp-1 ring steps)", cp - 1),
                             L * mb * (cp - 1), 2 * kv_bytes, Overlap::kYes, note));
    }
  }
  // Expert parallelism (GShard, Lepikhin et al. 2020; Megatron-core MoE token dispatcher): an
  // all-to-all sends each token to its top-k experts and another brings the results back, in
  // forward and again in backward. With SP each TP rank dispatches its 1/tp of the tokens.
  if (ep > 1 && M > 0) {
    const double dispatching = tokens / (sp ? tp : 1);
    const int64_t calls = M * mb * (fwd_per_layer + 2);
    const std::string freq = fmt::format(
        "{} per MoE layer per microbatch (dispatch and combine, forward and backward{})",
        fwd_per_layer + 2, recompute_note);
    const std::string note =
        cfg.ep_overlap
            ? "under another microbatch's compute (1F1B A2A overlap), except the warm-up and "
              "cool-down chunks'"
            : "on the critical path unless the schedule overlaps it (DualPipe)";
    const Overlap overlap = cfg.ep_overlap ? Overlap::kPartly : Overlap::kNo;
    bool done = false;
    if (cfg.hierarchical_ep_dispatch) {
      RETURN_IF_ERROR(b.AddHierarchicalDispatch(
          m, dispatching * static_cast<double>(m.hidden) * kActivationBytes, calls, freq, overlap,
          note, &done));
    }
    if (!done) {
      const double bytes = dispatching * static_cast<double>(m.top_k) *
                           static_cast<double>(m.hidden) * kActivationBytes;
      RETURN_IF_ERROR(b.Add(CommItemKind::kEpAllToAll,
                            {"EP all-to-all dispatch and combine of routed tokens",
                             "ep",
                             Collective::kAllToAll,
                             freq,
                             0,
                             bytes,
                             calls,
                             {},
                             {},
                             0,
                             overlap,
                             note},
                            {Axis::kEp}));
    }
  }
  // Pipeline parallelism: each chunk sends its output forward and its input gradient backward,
  // once per microbatch (Megatron sends the SP-sharded tensor when SP is on).
  if (pp > 1) {
    const double bytes = act_bytes / (sp ? tp : 1);
    RETURN_IF_ERROR(
        b.Add(CommItemKind::kPpSendRecv,
              {"PP send/recv of activations and gradients at stage boundaries",
               "pp",
               Collective::kSendRecv,
               fmt::format("2 per chunk per microbatch (forward and backward; {} chunk{} per rank)",
                           rep.vpp, rep.vpp == 1 ? "" : "s"),
               0,
               bytes,
               2 * int64_t{rep.vpp} * mb,
               {},
               {},
               0,
               Overlap::kPartly,
               "between stages; the schedule simulator puts its latency on the critical path"},
              {Axis::kPp}));
    // Tied embeddings: the first and last stage each hold the table; Megatron all-reduces its
    // gradient between them once per step (megatron/core/distributed/finalize_model_grads.py).
    if (m.tied_embeddings) {
      std::vector<int64_t> ppg;
      placement.GroupRanksOver(std::vector<Axis>{Axis::kPp}, 0, &ppg);
      std::vector<int64_t> ends = {ppg.front(), ppg.back()};
      RETURN_IF_ERROR(b.AddOnRanks(
          CommItemKind::kTiedEmbeddingReduce,
          {"tied embedding gradient all-reduce (first and last stage)",
           "pp ends",
           Collective::kAllReduce,
           "once per step",
           0,
           static_cast<double>(m.vocab) * static_cast<double>(m.hidden) / tp * grad_bytes,
           1,
           {},
           {},
           0,
           Overlap::kNo,
           "after the last backward"},
          ends));
    }
  }
  // Data parallelism over dp x cp (Megatron reduces gradients over its intra_dp_cp group). Dense
  // weights span every data-parallel rank; routed experts only their expert-data-parallel replicas.
  const int dense_dp = dp * cp;
  const int expert_dp = dp / ep * cp;
  const auto [dense_kind, dense_axes] = DenseDataParallelGroup(par);
  const std::string expert_kind = cp > 1 ? "edp+cp" : "edp";
  const std::vector<Axis> expert_axes =
      cp > 1 ? std::vector<Axis>{Axis::kDp, Axis::kCp} : std::vector<Axis>{Axis::kDp};
  // `what` names the weights: "weights", "dense weights" or "expert weights".
  // `gather_b`: the bytes per parameter the ZeRO 1-2 all-gather of the updated weights moves.
  auto add_dp = [&](const std::string& what, const std::string& kind, const std::vector<Axis>& axes,
                    int size, double params, double gather_b) -> Status {
    const std::string prefix = kind.substr(0, 3) == "edp" ? "EDP" : "DP";
    if (size < 2 || params <= 0) return Status::Ok();
    if (par.zero_stage >= 3) {
      // FSDP / ZeRO-3 (Rajbhandari et al. 2020, sec. 5.3; PyTorch FSDP): gather each layer's
      // weights before its forward and again before its backward, reduce-scatter its gradients,
      // every microbatch (weights are resharded after forward). Under a pipeline as torchtitan
      // runs it (MemoryConfig::fsdp_once_per_step_with_pp), once per step instead: the first
      // microbatch's forward gathers, nothing is resharded before the step ends, and the
      // gradients are reduce-scattered after the last microbatch's backward.
      const bool once = job.fsdp_once_per_step_with_pp && par.pp > 1;
      const double layer_params = params / std::max<int64_t>(1, L);
      const bool per_linear = cfg.fsdp_per_parameter;
      const std::string note =
          per_linear ? "each linear gathered by its own call, prefetched within the live bound"
                     : "prefetched: overlapped with the previous layer's compute";
      const std::string per = once         ? "1 per layer per step"
                              : per_linear ? "1 layer's weights per microbatch, a call per linear"
                                           : "1 per layer per microbatch";
      RETURN_IF_ERROR(b.Add(CommItemKind::kFsdpGatherForward,
                            {"FSDP all-gather of " + what + " (forward)",
                             kind,
                             Collective::kAllGather,
                             per,
                             0,
                             layer_params * kParamBytes,
                             once ? L : L * mb * (full ? 2 : 1),
                             {},
                             {},
                             0,
                             Overlap::kYes,
                             note},
                            axes));
      if (!once) {
        RETURN_IF_ERROR(b.Add(CommItemKind::kFsdpGatherBackward,
                              {"FSDP all-gather of " + what + " (backward)",
                               kind,
                               Collective::kAllGather,
                               per,
                               0,
                               layer_params * kParamBytes,
                               L * mb,
                               {},
                               {},
                               0,
                               Overlap::kYes,
                               note},
                              axes));
      }
      return b.Add(CommItemKind::kFsdpReduceScatter,
                   {"FSDP reduce-scatter of the gradients of " + what,
                    kind,
                    Collective::kReduceScatter,
                    per,
                    0,
                    layer_params * grad_bytes,
                    once ? L : L * mb,
                    {},
                    {},
                    0,
                    once ? Overlap::kNo : Overlap::kYes,
                    once ? "after the last microbatch's backward"
                         : "overlapped with the next layer's backward"},
                   axes);
    }
    const double bucket =
        cfg.bucket_params > 0 ? static_cast<double>(cfg.bucket_params) : std::max(4e7, 1e6 * size);
    const int64_t buckets = static_cast<int64_t>(std::ceil(params / bucket));
    const double per_bucket = params / static_cast<double>(buckets);
    const std::string freq = fmt::format(
        "per bucket of {:.3g}M parameters, once per step ({} buckets)", per_bucket / 1e6, buckets);
    const std::string note = "overlapped with backward as buckets fill, except the last bucket";
    if (par.zero_stage == 0) {
      return b.Add(CommItemKind::kDpGradAllReduce,
                   {prefix + " all-reduce of the gradients of " + what,
                    kind,
                    Collective::kAllReduce,
                    freq,
                    0,
                    per_bucket * grad_bytes,
                    buckets,
                    {},
                    {},
                    0,
                    Overlap::kYes,
                    note},
                   axes);
    }
    // ZeRO-1/2 and Megatron's distributed optimizer: reduce-scatter the gradients, step the
    // shard, all-gather the updated weights (BF16, or FP8 where they are FP8: gather_b).
    RETURN_IF_ERROR(b.Add(CommItemKind::kDpGradReduceScatter,
                          {prefix + " reduce-scatter of the gradients of " + what,
                           kind,
                           Collective::kReduceScatter,
                           freq,
                           0,
                           per_bucket * grad_bytes,
                           buckets,
                           {},
                           {},
                           0,
                           Overlap::kYes,
                           note},
                          axes));
    return b.Add(CommItemKind::kDpParamAllGather,
                 {prefix + " all-gather of the updated " + what,
                  kind,
                  Collective::kAllGather,
                  freq,
                  0,
                  per_bucket * gather_b,
                  buckets,
                  {},
                  {},
                  0,
                  Overlap::kPartly,
                  "overlapped with the next step's forward when enabled (overlap_param_gather)"},
                 axes);
  };
  if (ep > 1) {
    RETURN_IF_ERROR(add_dp("dense weights", dense_kind, dense_axes, dense_dp, max_dense_params,
                           per_param(max_dense_gather_bytes, max_dense_params)));
    RETURN_IF_ERROR(add_dp("expert weights", expert_kind, expert_axes, expert_dp, max_expert_params,
                           per_param(max_expert_gather_bytes, max_expert_params)));
  } else {
    RETURN_IF_ERROR(add_dp("weights", dense_kind, dense_axes, dense_dp,
                           max_dense_params + max_expert_params,
                           per_param(max_dense_gather_bytes + max_expert_gather_bytes,
                                     max_dense_params + max_expert_params)));
  }

  plan.items = b.Take();
  for (const CommItem& it : plan.items) plan.total_s += it.time_per_step_s;
  return plan;
}

StatusOr<std::vector<FsdpCall>> EstimateFsdpCalls(const cluster::Cluster& c,
                                                  const CommPlanConfig& cfg,
                                                  const std::vector<double>& params) {
  const ParallelConfig& par = cfg.job.parallel;
  ASSIGN_OR_RETURN(cluster::Placement placement, PlaceJob(par, cfg.order, c.num_gpus()));
  const auto [kind, axes] = DenseDataParallelGroup(par);
  const double grad_bytes = cfg.job.fp32_gradients ? 4 : 2;
  Builder b(c, placement, cfg.overrides);
  std::vector<FsdpCall> calls;
  calls.reserve(params.size());
  for (double p : params) {
    ASSIGN_OR_RETURN(collective::Estimate ag,
                     b.Estimate(kind, axes, Collective::kAllGather, p * kParamBytes));
    ASSIGN_OR_RETURN(collective::Estimate rs,
                     b.Estimate(kind, axes, Collective::kReduceScatter, p * grad_bytes));
    calls.push_back({p, ag.time_s, rs.time_s});
  }
  return calls;
}

}  // namespace infralens::plan
