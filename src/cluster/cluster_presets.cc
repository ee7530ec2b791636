// Cluster presets. Every figure cites its source; "assumed" marks the ones no public document
// pins down (docs/topology.md repeats the table with the same notes).
//
// Unit conversions used below: NVIDIA quotes NVLink as bidirectional GB/s per GPU, so per
// direction is half (900 GB/s -> 450e9 bytes/s). A NIC's line rate in Gb/s is bits: 400 Gb/s =
// 50e9 bytes/s per direction. PCIe x16 per direction: Gen4 32 GB/s, Gen5 64 GB/s (PCI-SIG, 16 and
// 32 GT/s with 128b/130b encoding; the vendors' "64 / 128 GB/s" are bidirectional).
#include <fmt/format.h>

#include "base/strings.h"
#include "cluster/cluster.h"

namespace infralens::cluster {

namespace {

// Achieved fractions of line rate (see docs/collectives.md, "Achieved bandwidth"):
// NVLink 4 through NVSwitch: ~370 GB/s ring busbw of 450 GB/s line rate on 8x H100 ("with the
// protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s";
// NVIDIA/nccl-tests issue #212, sjeaugey).
constexpr double kNvLink4Efficiency = 370.0 / 450.0;
// NVLink 3 on A100: NCCL's own tuning model caps sm80 bus bandwidth at 235 GB/s
// (NVIDIA/nccl src/graph/tuning.cc: `if (compCap80) busBw = std::min(busBw, 235.0f)`) of 300.
constexpr double kNvLink3Efficiency = 235.0 / 300.0;
// NVLink 5: 8x B300 without NVLink SHARP reaches ~695 GB/s busbw of 900 GB/s
// (NVIDIA/nccl issue #2140, measurements in the report).
constexpr double kNvLink5Efficiency = 695.0 / 900.0;
// NDR 400 Gb/s InfiniBand: "For NDR @ 400Gbps you should see 46-48GB/s per NIC"
// (NVIDIA/nccl-tests issue #290, AddyLaddy); 47 of 50.
constexpr double kNdrEfficiency = 47.0 / 50.0;
// NVLink SHARP all-reduce (NodeSpec::nvls_efficiency): 8x H100 (p5.48xlarge) run nccl-tests
// all_reduce_perf at 2 GiB in 8019.8 us, algbw 267.77 GB/s, busbw 468.60 GB/s, with NCCL's log
// reading "Connected NVLS tree" and "16 nvls channels" (aws-samples/aws-do-eks
// Container-Root/eks/deployment/nccl-test/README.md, 701c554, "Expected results"); NVLS moves
// S per GPU: less NCCL's 25 us NVLS latency (src/collective/collective.cc), 2 GiB in 7994.8 us,
// 268.6 of 450 GB/s. Above a ring's 370 GB/s busbw, so NVLS it was.
constexpr double kNvls4Efficiency = 2147483648.0 / (8019.8e-6 - 25e-6) / 450e9;
// Blackwell: no measurement read; NCCL's own tuning rates NVLS at nvlsEfficiency 0.74 of the
// NVLink bandwidth on Blackwell against 0.85 on Hopper (src/graph/tuning.cc, NVIDIA/nccl 2.30.7),
// so Hopper's measured figure scaled by 0.74 / 0.85.
constexpr double kNvls5Efficiency = kNvls4Efficiency * 0.74 / 0.85;
// HDR 200 Gb/s: "you should get ... 24GB/s inter-node" per HDR NIC (NVIDIA/nccl issue #412,
// sjeaugey); 24 of 25.
constexpr double kHdrEfficiency = 24.0 / 25.0;
// PCIe peer-to-peer: assumed 75% (TLP headers and flow control on 256-byte payloads cost ~10%,
// host bridges more); no nccl-tests figure was found to cite. Doubtful.
constexpr double kPcieEfficiency = 0.75;
// Infinity Fabric on MI300X: assumed like NVLink through a switch-less mesh. Doubtful.
constexpr double kXgmiEfficiency = 0.75;

constexpr double kGBps = 1e9;             // bytes per second
constexpr double kGB = 1e9;               // bytes
constexpr double kTiB = 1024 * kGiB;      // bytes (DIMM capacities are binary)
constexpr double kGbpsToBytes = 1e9 / 8;  // bits per second -> bytes per second

Cluster Make(std::string name, std::string description, std::string source, NodeSpec node,
             int nodes_per_su) {
  Cluster c;
  c.name = std::move(name);
  c.description = std::move(description);
  c.source = std::move(source);
  c.node = std::move(node);
  c.nodes_per_su = nodes_per_su;
  c.num_nodes = 1;
  return c;
}

// The preset with its nodes' host memory (NodeSpec::host_memory_bytes), from the same datasheet.
Cluster WithHostMemory(Cluster c, double bytes) {
  c.node.host_memory_bytes = bytes;
  return c;
}

std::vector<ClusterPreset> BuildPresets() {
  std::vector<ClusterPreset> p;
  // NVIDIA DGX A100 datasheet: 8x A100 SXM4, 6x NVSwitch, "600 GB/s GPU-to-GPU bidirectional
  // bandwidth", 8x single-port ConnectX-6 200 Gb/s HDR for the compute fabric, PCIe Gen4.
  // DGX SuperPOD (A100) reference architecture: a scalable unit is 20 DGX A100 with one leaf
  // switch per rail (8 leaves per SU).
  // Host memory: DGX A100 datasheet, "System Memory 2TB" (the 640 GB system).
  p.push_back(
      {"dgx-a100",
       WithHostMemory(
           Make("dgx-a100", "NVIDIA DGX A100: 8x A100 SXM4, NVSwitch (NVLink 3), 8x 200 Gb/s HDR",
                "DGX A100 datasheet; DGX SuperPOD A100 reference architecture (SU = 20 nodes)",
                NodeSpec{8, "A100-80GB", ScaleUpFabric::kNvSwitch, 300 * kGBps, kNvLink3Efficiency,
                         32 * kGBps, kPcieEfficiency, 8, 200 * kGbpsToBytes, kHdrEfficiency},
                20),
           2 * kTiB)});
  // NVIDIA DGX A100 datasheet, the 320 GB system: 8x A100 SXM4 40GB, otherwise as above (the
  // same NVSwitch fabric and 8x ConnectX-6 200 Gb/s HDR for compute). The GPU of the
  // Megatron-LM (Narayanan et al. 2021) and many 2020-21 runs.
  // Host memory: DGX A100 datasheet, "System Memory 1TB" (the 320 GB system).
  p.push_back(
      {"dgx-a100-40gb",
       WithHostMemory(
           Make("dgx-a100-40gb",
                "NVIDIA DGX A100 320GB: 8x A100 SXM4 40GB, NVSwitch (NVLink 3), 8x 200 Gb/s HDR",
                "DGX A100 datasheet (320 GB system); DGX SuperPOD A100 reference architecture "
                "(SU = 20 nodes)",
                NodeSpec{8, "A100-40GB", ScaleUpFabric::kNvSwitch, 300 * kGBps, kNvLink3Efficiency,
                         32 * kGBps, kPcieEfficiency, 8, 200 * kGbpsToBytes, kHdrEfficiency},
                20),
           1 * kTiB)});
  // NVIDIA DGX H100 datasheet: 8x H100 SXM5, 4x NVSwitch, "900GB/s" NVLink per GPU
  // (bidirectional), 8x single-port ConnectX-7 400 Gb/s (4 OSFP ports), PCIe Gen5.
  // DGX SuperPOD H100 reference architecture: SU = 32 DGX H100, rail-optimised, one leaf
  // switch per rail per SU.
  // Host memory: DGX H100 datasheet, "System Memory 2TB".
  p.push_back(
      {"dgx-h100",
       WithHostMemory(
           Make("dgx-h100", "NVIDIA DGX H100: 8x H100 SXM5, NVSwitch (NVLink 4), 8x 400 Gb/s NDR",
                "DGX H100 datasheet; DGX SuperPOD H100 reference architecture (SU = 32 nodes)",
                NodeSpec{8, "H100-SXM", ScaleUpFabric::kNvSwitch, 450 * kGBps, kNvLink4Efficiency,
                         64 * kGBps, kPcieEfficiency, 8, 400 * kGbpsToBytes, kNdrEfficiency,
                         kNvls4Efficiency},
                32),
           2 * kTiB)});
  // NVIDIA DGX H200 datasheet: 8x H200 (141 GB), NVLink 900 GB/s per GPU, 4x NVSwitch,
  // 8x ConnectX-7 400 Gb/s. Same SuperPOD SU as H100.
  // Host memory: DGX H200 datasheet, "System Memory 2TB".
  p.push_back(
      {"dgx-h200",
       WithHostMemory(
           Make("dgx-h200", "NVIDIA DGX H200: 8x H200, NVSwitch (NVLink 4), 8x 400 Gb/s NDR",
                "DGX H200 datasheet; DGX SuperPOD H100/H200 reference architecture (SU = 32 nodes)",
                NodeSpec{8, "H200", ScaleUpFabric::kNvSwitch, 450 * kGBps, kNvLink4Efficiency,
                         64 * kGBps, kPcieEfficiency, 8, 400 * kGbpsToBytes, kNdrEfficiency,
                         kNvls4Efficiency},
                32),
           2 * kTiB)});
  // NVIDIA DGX B200 datasheet: 8x B200, 2x NVSwitch, "1.8TB/s" NVLink 5 per GPU
  // (14.4 TB/s aggregate), 8x single-port ConnectX-7 400 Gb/s. DGX SuperPOD B200 RA: SU = 32.
  // Host memory: DGX B200 User Guide, "2 TB using 32 x DIMMs (upgradable to 4 TB)".
  p.push_back(
      {"dgx-b200",
       WithHostMemory(
           Make("dgx-b200", "NVIDIA DGX B200: 8x B200, NVSwitch (NVLink 5), 8x 400 Gb/s NDR",
                "DGX B200 datasheet; DGX SuperPOD B200 reference architecture (SU = 32 nodes)",
                NodeSpec{8, "B200", ScaleUpFabric::kNvSwitch, 900 * kGBps, kNvLink5Efficiency,
                         64 * kGBps, kPcieEfficiency, 8, 400 * kGbpsToBytes, kNdrEfficiency,
                         kNvls5Efficiency},
                32),
           2 * kTiB)});
  // NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s per GPU, 130 TB/s in
  // total (GB200 NVL72 product page). DGX GB200 datasheet: 72x single-port ConnectX-7 400 Gb/s
  // per rack. DGX SuperPOD GB200 RA: SU = 8 racks (576 GPUs). The "node" here is the rack.
  // Host memory: 36 Grace CPUs with 480 GB LPDDR5X each (GB200 NVL72 page: "up to 17 TB LPDDR5X").
  p.push_back(
      {"gb200-nvl72",
       WithHostMemory(
           Make("gb200-nvl72",
                "NVIDIA GB200 NVL72 rack as one node: 72 B200 in one NVLink 5 domain, 72x 400 Gb/s",
                "GB200 NVL72 product page; DGX GB200 datasheet; DGX SuperPOD GB200 RA "
                "(SU = 8 racks)",
                NodeSpec{72, "GB200", ScaleUpFabric::kNvSwitch, 900 * kGBps, kNvLink5Efficiency,
                         64 * kGBps, kPcieEfficiency, 72, 400 * kGbpsToBytes, kNdrEfficiency,
                         kNvls5Efficiency},
                8),
           36 * 480 * kGB)});
  // NVIDIA H100 PCIe datasheet: "NVLink: 600GB/s" over a 2-way bridge, "PCIe Gen5: 128GB/s"
  // (both bidirectional). Network per NVIDIA Enterprise Reference Architecture "PCIe optimised
  // 2-8-5-200": 2 CPUs, 8 GPUs, 5 NICs of which 4 east-west at 400 Gb/s = 200 Gb/s per GPU.
  // SU size: assumed 32 like the SuperPOD designs (the Enterprise RA tops out at 32 nodes).
  p.push_back(
      {"h100-pcie",
       Make("h100-pcie",
            "8x H100 PCIe server: NVLink bridge pairs, PCIe Gen5, 4x 400 Gb/s (2-8-5-200)",
            "H100 PCIe datasheet; NVIDIA Enterprise RA 2-8-5-200 PCIe-optimised server",
            NodeSpec{8, "H100-PCIe", ScaleUpFabric::kNvLinkBridge, 300 * kGBps, kNvLink4Efficiency,
                     64 * kGBps, kPcieEfficiency, 4, 400 * kGbpsToBytes, kNdrEfficiency},
            32)});
  // AMD Instinct MI300X platform datasheet: 8 GPUs fully connected by 4th-gen Infinity Fabric,
  // 7 links per GPU at 128 GB/s bidirectional, "896 GB/s" aggregate peer-to-peer per GPU
  // (448e9 bytes/s per direction); PCIe Gen5 x16 per GPU. NICs: 8x 400 Gb/s, one per GPU, as
  // AMD's MI300X cluster reference designs use. SU: assumed 32 as the SuperPOD.
  p.push_back(
      {"mi300x",
       Make("mi300x", "AMD MI300X platform: 8x MI300X, Infinity Fabric full mesh, 8x 400 Gb/s",
            "AMD Instinct MI300X platform datasheet (7 x 128 GB/s links per GPU)",
            NodeSpec{8, "MI300X", ScaleUpFabric::kFullMesh, 448 * kGBps, kXgmiEfficiency,
                     64 * kGBps, kPcieEfficiency, 8, 400 * kGbpsToBytes, kNdrEfficiency},
            32)});
  return p;
}

}  // namespace

const std::vector<ClusterPreset>& ClusterPresets() {
  static const auto* const kPresets = new std::vector<ClusterPreset>(BuildPresets());
  return *kPresets;
}

std::string ClusterPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : ClusterPresets()) names.push_back(p.name);
  return Join(names, ", ");
}

StatusOr<Cluster> FindClusterPreset(std::string_view name) {
  const std::string lower = ToLower(name);
  std::vector<std::string> names;
  for (const auto& p : ClusterPresets()) {
    if (p.name == lower) return p.cluster;
    names.push_back(p.name);
  }
  std::string hint = ClosestMatch(lower, names);
  return InvalidArgument(
      fmt::format("‹cluster› {}: unknown cluster{}; expected a preset ({}) or a .toml file", name,
                  hint.empty() ? "" : " (did you mean " + hint + "?)", Join(names, ", ")));
}

}  // namespace infralens::cluster
