// The options that place a job on a cluster, in every command that has one (topology, comm,
// comm-plan, memory, plan, explain, worksheet and the API): which cluster, how much of it (--gpus
// or --nodes), and the parallel degrees and rank order.
#ifndef INFRALENS_REQUEST_CLUSTER_FLAGS_H_
#define INFRALENS_REQUEST_CLUSTER_FLAGS_H_

#include <string>

#include "base/status.h"
#include "cluster/cluster.h"
#include "cluster/placement.h"
#include "request/flag_sink.h"

namespace infralens::request {

struct ClusterFlags {
  std::string cluster = "dgx-h100";
  int nodes = 0;  // 0: the topology file's `nodes`, else what the degrees need, else 1
  int gpus = 0;   // --gpus: the job's GPU count, whole nodes (sets the node count; or give --nodes)
  int tp = 1, cp = 1, ep = 1, dp = 0, pp = 1;  // dp 0: the GPU count over the other degrees
  std::string order = std::string(cluster::kDefaultOrder);
  // Whether --cluster may name a topology file. The web API takes presets only: no request
  // reads a file.
  bool files_allowed = true;

  // --cluster, --gpus, --nodes; with `degrees` also --tp --cp --ep --dp --pp --order.
  void Register(FlagSink& flags, bool degrees = true);
  // --cluster only (`trace calibrate`: the cluster whose links the traces crossed).
  void RegisterCluster(FlagSink& flags);
  // The preset, or the TOML file when --cluster names one (ends in .toml or contains '/'),
  // with the node count resolved as described at `nodes`.
  StatusOr<cluster::Cluster> Load(const GivenFn& given) const;
  StatusOr<cluster::Cluster> Load(const FlagSink& flags) const { return Load(GivenOf(flags)); }
  // The placement of the degrees on every GPU of `c` (dp derived when not given).
  StatusOr<cluster::Placement> Place(const cluster::Cluster& c) const;
  // Whether any degree flag was given.
  static bool AnyDegree(const GivenFn& given);
  static bool AnyDegree(const FlagSink& flags) { return AnyDegree(GivenOf(flags)); }
};

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_CLUSTER_FLAGS_H_
