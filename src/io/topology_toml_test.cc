#include "io/topology_toml.h"

#include <gtest/gtest.h>

namespace infralens::io {
namespace {

using cluster::Cluster;

std::string ErrorOf(std::string_view text) {
  auto c = ParseTopologyToml(text, "t.toml");
  EXPECT_FALSE(c.ok()) << text;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << c.status().message();
  return c.status().message();
}

constexpr const char* kFull = R"(
name = "lab"
gpu_model = "H100-SXM"
gpus_per_node = 8
nodes = 16
nodes_per_su = 4
[scale_up]
fabric = "nvswitch"
bandwidth_GBps = 450
efficiency = 0.8
[pcie]
bandwidth_GBps = 64
[network]
nics_per_node = 4
nic_Gbps = 400
efficiency = 0.9
)";

TEST(TopologyTomlTest, ReadsEveryField) {
  auto c = ParseTopologyToml(kFull, "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->name, "lab");
  EXPECT_EQ(c->node.gpus_per_node, 8);
  EXPECT_EQ(c->num_nodes, 16);
  EXPECT_EQ(c->nodes_per_su, 4);
  EXPECT_EQ(c->node.fabric, cluster::ScaleUpFabric::kNvSwitch);
  EXPECT_DOUBLE_EQ(c->node.scale_up_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(c->node.scale_up_efficiency, 0.8);
  EXPECT_DOUBLE_EQ(c->node.pcie_efficiency, 1.0);  // no base: line rate unless given
  EXPECT_EQ(c->node.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(c->node.nic_bytes_per_s, 50e9);  // 400 Gb/s / 8
  EXPECT_DOUBLE_EQ(c->node.nic_efficiency, 0.9);
}

TEST(TopologyTomlTest, BaseStartsFromAPreset) {
  auto c =
      ParseTopologyToml("base = \"dgx-h100\"\nnodes = 4\n[network]\nnic_Gbps = 200\n", "mine.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->name, "mine.toml");
  EXPECT_EQ(c->num_nodes, 4);
  EXPECT_DOUBLE_EQ(c->node.scale_up_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(c->node.nic_bytes_per_s, 25e9);
  EXPECT_EQ(c->nodes_per_su, 32);
}

TEST(TopologyTomlTest, EveryPresetRoundTrips) {
  for (const auto& p : cluster::ClusterPresets()) {
    Cluster want = p.cluster;
    want.num_nodes = 3;
    auto got = ParseTopologyToml(WriteTopologyToml(want), "x");
    ASSERT_TRUE(got.ok()) << p.name << ": " << got.status().message();
    EXPECT_EQ(got->name, want.name);
    EXPECT_EQ(got->num_nodes, 3);
    EXPECT_EQ(got->nodes_per_su, want.nodes_per_su);
    EXPECT_EQ(got->node.gpu_model, want.node.gpu_model);
    EXPECT_EQ(got->node.fabric, want.node.fabric);
    EXPECT_DOUBLE_EQ(got->node.scale_up_bytes_per_s, want.node.scale_up_bytes_per_s);
    EXPECT_DOUBLE_EQ(got->node.scale_up_efficiency, want.node.scale_up_efficiency);
    EXPECT_DOUBLE_EQ(got->node.pcie_bytes_per_s, want.node.pcie_bytes_per_s);
    EXPECT_DOUBLE_EQ(got->node.nic_bytes_per_s, want.node.nic_bytes_per_s);
    EXPECT_DOUBLE_EQ(got->node.nic_efficiency, want.node.nic_efficiency);
    EXPECT_EQ(got->node.nics_per_node, want.node.nics_per_node);
    EXPECT_EQ(got->node.nvls_efficiency, want.node.nvls_efficiency) << p.name;
    EXPECT_DOUBLE_EQ(got->node.host_memory_bytes, want.node.host_memory_bytes) << p.name;
  }
}

// A node's host memory (activation offloading's room): the presets' from their datasheets, a
// file's in GiB, 0 for unknown; negative and absurd values are refused.
TEST(TopologyTomlTest, HostMemory) {
  EXPECT_DOUBLE_EQ(cluster::FindClusterPreset("dgx-h100")->node.host_memory_bytes,
                   2048.0 * 1024 * 1024 * 1024);  // DGX H100 datasheet: 2 TB of DIMMs
  EXPECT_DOUBLE_EQ(cluster::FindClusterPreset("gb200-nvl72")->node.host_memory_bytes,
                   36 * 480e9);  // 36 Grace CPUs x 480 GB LPDDR5X
  EXPECT_EQ(cluster::FindClusterPreset("mi300x")->node.host_memory_bytes, 0);  // not stated
  auto c = ParseTopologyToml("base = \"dgx-h100\"\nhost_memory_GiB = 512\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->node.host_memory_bytes, 512.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\nhost_memory_GiB = -1\n"),
            "host_memory_GiB = -1: must be 0 (unknown) to 1048576");
  EXPECT_NE(ErrorOf("base = \"dgx-h100\"\nhost_memory_GiB = 1e300\n").find("host_memory_GiB"),
            std::string::npos);
}

// NVLink SHARP: a base preset's value stands, a file sets or clears it, a fabric other than an
// NVSwitch cannot have it (and drops the base's when the file changes the fabric), and it is a
// fraction.
TEST(TopologyTomlTest, NvlsEfficiency) {
  // The file's NVLS efficiency, or -1 when it does not parse (with the failure reported).
  const auto nvls = [](std::string_view text) {
    auto c = ParseTopologyToml(text, "t.toml");
    EXPECT_TRUE(c.ok()) << text << ": " << c.status().message();
    return c.ok() ? c->node.nvls_efficiency : -1.0;
  };
  EXPECT_GT(nvls("base = \"dgx-h100\"\n"), 0);
  EXPECT_EQ(nvls("base = \"dgx-a100\"\n[scale_up]\nnvls_efficiency = 0.5\n"), 0.5);
  EXPECT_EQ(nvls("base = \"dgx-h100\"\n[scale_up]\nnvls_efficiency = 0\n"), 0);
  EXPECT_EQ(nvls("base = \"dgx-h100\"\n[scale_up]\nfabric = \"full-mesh\"\n"), 0);
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\n[scale_up]\nfabric = \"full-mesh\"\n"
                    "nvls_efficiency = 0.5\n"),
            "scale_up.nvls_efficiency = 0.5: NVLink SHARP needs fabric nvswitch, not full-mesh");
  EXPECT_NE(ErrorOf("base = \"dgx-h100\"\n[scale_up]\nnvls_efficiency = 1.5\n")
                .find("scale_up.nvls_efficiency = 1.5: must be a fraction"),
            std::string::npos);
}

TEST(TopologyTomlTest, UnknownKeysNameTheKeyAndTheAllowedOnes) {
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\ngpus = 8\n"),
            "unknown key 'gpus'; allowed at the top level: name, base, description, gpu_model, "
            "gpus_per_node, nodes, "
            "nodes_per_su, host_memory_GiB, scale_up, pcie, network");
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\n[scale_up]\nbandwidth = 1\n"),
            "unknown key 'scale_up.bandwidth'; allowed in [scale_up]: fabric, bandwidth_GBps, "
            "efficiency, nvls_efficiency");
}

TEST(TopologyTomlTest, BadValuesNameTheValue) {
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\n[scale_up]\nbandwidth_GBps = -450\n"),
            "scale_up.bandwidth_GBps = -450: must be a bandwidth > 0 GB/s");
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\n[network]\nnic_Gbps = 0\n"),
            "network.nic_Gbps = 0: must be a bandwidth > 0 Gb/s");
  EXPECT_NE(ErrorOf("base = \"dgx-h100\"\n[network]\nefficiency = 1.5\n")
                .find("network.efficiency = 1.5"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\ngpus_per_node = \"8\"\n"),
            "gpus_per_node: expected an integer, got a string");
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\ngpus_per_node = 0\n"),
            "gpus_per_node = 0: must be 1..1024");
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\nnodes = 100000\n"), "nodes = 100000: must be 1..65536");
  EXPECT_NE(ErrorOf("base = \"dgx-h100\"\nnodes = 9000\n").find("at most 65536 GPUs"),
            std::string::npos);
  EXPECT_NE(ErrorOf("base = \"dgx-h9\"\n").find("unknown preset"), std::string::npos);
  EXPECT_NE(
      ErrorOf("base = \"dgx-h100\"\n[scale_up]\nfabric = \"torus\"\n").find("expected nvswitch"),
      std::string::npos);
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\nscale_up = 3\n"),
            "scale_up: expected a table ([scale_up]), got an integer");
  EXPECT_EQ(ErrorOf("gpus_per_node = 8\n"),
            "missing scale_up.fabric, scale_up.bandwidth_GBps, network.nics_per_node, "
            "network.nic_Gbps (required "
            "unless base = \"<preset>\" is given)");
  EXPECT_NE(ErrorOf("base = \"dgx-h100\"\n[scale_up]\nbandwidth_GBps = inf\n").find("finite"),
            std::string::npos);
}

// Found by the fuzzer: toml++ 3.3 hits __builtin_unreachable on U+FEFB; non-ASCII is refused first.
TEST(TopologyTomlTest, NonAsciiIsRefusedAndBomSkipped) {
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\n\xEF\xBB\xBB = 3\n"),
            "line 2, column 1: byte 0xEF is not ASCII; topology files are ASCII text");
  EXPECT_TRUE(ParseTopologyToml("\xEF\xBB\xBF"
                                "base = \"dgx-h100\"\n",
                                "bom.toml")
                  .ok());
}

TEST(TopologyTomlTest, SyntaxErrorsGiveLineAndColumn) {
  EXPECT_EQ(ErrorOf("base = \"dgx-h100\"\nnodes = = 3\n").rfind("line 2, column", 0), 0u);
  EXPECT_FALSE(ErrorOf("[[[").empty());
  EXPECT_FALSE(ErrorOf(std::string(kMaxTopologyBytes + 1, '#')).empty());
}

}  // namespace
}  // namespace infralens::io
