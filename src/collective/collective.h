// Collective communication costs on a cluster: an alpha-beta model per link class.
//
//   time = base latency + sum over steps of the per-step latency (alpha) of the link each step
//          crosses + sum over phases of max over link classes of bytes / achieved bandwidth (beta)
//
// Sizes follow nccl-tests (doc/PERFORMANCE.md): S is the whole buffer in bytes: all_reduce and
// broadcast S per rank, all_gather the gathered output, reduce_scatter the input before
// scattering, all_to_all each rank's send buffer, send_recv the message. algbw = S / time and
// busbw = algbw * factor, factor = 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
// reduce_scatter and all_to_all, 1 for broadcast and send_recv.
//
// By default latencies and the message-size efficiency (NCCL's LL / LL128 / Simple protocols) come
// from NCCL's tuning model (src/graph/tuning.cc) and bandwidths from the cluster's line rates times
// their achieved fractions (cluster.h). Overrides make it a textbook alpha-beta model: with both
// --bandwidth B and --latency a, a ring all_reduce over n GPUs of one node takes exactly
// 2(n-1) a + 2(n-1)/n S / B. docs/collectives.md derives every formula.
#ifndef INFRALENS_COLLECTIVE_COLLECTIVE_H_
#define INFRALENS_COLLECTIVE_COLLECTIVE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"

namespace infralens::collective {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

enum class Algorithm {
  kAuto,           // the fastest applicable algorithm (and protocol)
  kRing,           // one flat ring through all ranks; crosses each node boundary on one NIC
  kMultiRailRing,  // NCCL's rings: one per rail, each crossing node boundaries on its own NIC
  kTree,           // NCCL's tree (all_reduce only): chain inside a node, double binary tree across
  kHierarchical,   // intra-node reduce-scatter, inter-node all-reduce per rail, intra-node
                   // all-gather
  kPairwise,       // all_to_all: every rank sends S/n to every other rank at once
  kDirect,         // send_recv: each rank sends S to the next rank of the group
  kNvls,           // NVLink SHARP (all_reduce in one NVSwitch domain): the switch reduces and
                   // multicasts, S per GPU per direction (NodeSpec::nvls_efficiency)
};

// NCCL's protocols: LL (8-byte stores carrying 4 bytes of data and a flag: low latency, a quarter
// to a third of the bandwidth), LL128 (128-byte lines, 120 of data) and Simple (full bandwidth,
// highest latency). Small messages pick LL, large ones Simple: the model's message-size curve.
enum class Protocol { kLL, kLL128, kSimple };

std::string_view CollectiveName(Collective c);  // "all_reduce", ...
std::string_view AlgorithmName(Algorithm a);    // "auto", "ring", "multi-rail", "tree", "nvls", ...
std::string_view ProtocolName(Protocol p);      // "LL", "LL128", "Simple"
StatusOr<Collective> ParseCollective(
    std::string_view name);  // also accepts "allreduce", "all-reduce"
StatusOr<Algorithm> ParseAlgorithm(std::string_view name);

// nccl-tests' bus-bandwidth factor for n ranks.
double BusBwFactor(Collective c, int n);

// Constants the command line can override. Unset = the cluster's figures and NCCL's latencies.
struct Overrides {
  // Achieved bandwidth per GPU per direction on every link class, bytes/s (--bandwidth GB/s).
  std::optional<double> bytes_per_s;
  // Latency of each step on every link class, seconds (--latency us). Setting it also removes
  // NCCL's per-collective base latency and protocol choice (Simple only): a pure alpha-beta model.
  std::optional<double> step_latency_s;
};

struct Request {
  Collective collective = Collective::kAllReduce;
  int64_t size_bytes = 0;  // > 0
  Algorithm algorithm = Algorithm::kAuto;
  Overrides overrides;
};

// What one link class carries in an estimate.
struct LinkUse {
  cluster::LinkClass link = cluster::LinkClass::kNone;
  double bytes_per_gpu = 0;  // bytes one GPU sends on this class, averaged over the group's GPUs
  double bytes_per_s = 0;    // achieved bandwidth per GPU per direction used for it
  int steps = 0;             // latency steps that cross this class
  double latency_s = 0;      // steps * per-step latency
  double bandwidth_s = 0;    // the bandwidth time charged to this class, summed over phases
};

struct Estimate {
  Collective collective = Collective::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int64_t size_bytes = 0;
  int ranks = 0;
  int nodes = 0;
  double time_s = 0;
  double base_latency_s = 0;  // NCCL's fixed per-collective latency (0 with --latency)
  double latency_s = 0;       // base + all steps
  double bandwidth_s = 0;     // time - latency
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
  double busbw_factor = 0;
  cluster::LinkClass bottleneck =
      cluster::LinkClass::kNone;  // the class with the largest time share
  std::vector<LinkUse> links;     // classes used, innermost first
};

// Estimates `request` on the group `ranks` (ascending global ranks, at least 2, each below
// cluster.num_gpus()). With Algorithm::kAuto: the fastest applicable algorithm and protocol.
// InvalidArgument when the algorithm does not apply (e.g. tree for all_gather).
// All groups of an axis are assumed to communicate at once, so a GPU gets its share of its
// node's NICs (Cluster::NicShareBytesPerS).
StatusOr<Estimate> EstimateCollective(const cluster::Cluster& cluster,
                                      std::span<const int64_t> ranks, const Request& request);

// Every applicable algorithm, each with its fastest protocol, fastest first (ties: listing order).
StatusOr<std::vector<Estimate>> EstimateAlgorithms(const cluster::Cluster& cluster,
                                                   std::span<const int64_t> ranks,
                                                   const Request& request);

}  // namespace infralens::collective

#endif  // INFRALENS_COLLECTIVE_COLLECTIVE_H_
