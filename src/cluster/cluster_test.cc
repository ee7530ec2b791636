#include "cluster/cluster.h"

#include <gtest/gtest.h>

#include "cluster/testing.h"

namespace infralens::cluster {
namespace {

using testing::Preset;

TEST(ClusterPresetsTest, EveryPresetIsValidAndCited) {
  ASSERT_GE(ClusterPresets().size(), 7u);
  for (const auto& p : ClusterPresets()) {
    EXPECT_TRUE(Validate(p.cluster).ok()) << p.name << ": " << Validate(p.cluster).message();
    EXPECT_EQ(p.name, p.cluster.name);
    EXPECT_FALSE(p.cluster.source.empty()) << p.name;
    EXPECT_FALSE(p.cluster.description.empty()) << p.name;
  }
}

// Datasheet figures, converted by hand: NVLink bidirectional / 2, NIC Gb/s / 8.
TEST(ClusterPresetsTest, DatasheetFiguresPerDirection) {
  Cluster a100 = Preset("dgx-a100");
  EXPECT_DOUBLE_EQ(a100.node.scale_up_bytes_per_s, 600e9 / 2);
  EXPECT_DOUBLE_EQ(a100.node.nic_bytes_per_s, 200e9 / 8);
  EXPECT_EQ(a100.nodes_per_su, 20);
  Cluster h100 = Preset("dgx-h100");
  EXPECT_DOUBLE_EQ(h100.node.scale_up_bytes_per_s, 900e9 / 2);
  EXPECT_DOUBLE_EQ(h100.node.nic_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(h100.node.nics_per_node, 8);
  EXPECT_EQ(h100.nodes_per_su, 32);
  // ~370 GB/s of 450 on NVLink 4 (nccl-tests #212) and 47 of 50 GB/s per NDR NIC (#290).
  EXPECT_NEAR(h100.node.scale_up_bytes_per_s * h100.node.scale_up_efficiency, 370e9, 1);
  EXPECT_NEAR(h100.node.nic_bytes_per_s * h100.node.nic_efficiency, 47e9, 1);
  EXPECT_DOUBLE_EQ(Preset("dgx-b200").node.scale_up_bytes_per_s, 1800e9 / 2);
  Cluster nvl72 = Preset("gb200-nvl72");
  EXPECT_EQ(nvl72.node.gpus_per_node, 72);
  EXPECT_EQ(nvl72.node.fabric, ScaleUpFabric::kNvSwitch);
  Cluster pcie = Preset("h100-pcie");
  EXPECT_EQ(pcie.node.fabric, ScaleUpFabric::kNvLinkBridge);
  EXPECT_DOUBLE_EQ(pcie.node.scale_up_bytes_per_s, 600e9 / 2);
  EXPECT_DOUBLE_EQ(pcie.node.pcie_bytes_per_s, 128e9 / 2);
  Cluster mi = Preset("mi300x");
  EXPECT_EQ(mi.node.fabric, ScaleUpFabric::kFullMesh);
  EXPECT_DOUBLE_EQ(mi.node.scale_up_bytes_per_s, 7 * 128e9 / 2);
}

TEST(ClusterPresetsTest, LookupIsCaseInsensitiveAndSuggests) {
  EXPECT_TRUE(FindClusterPreset("DGX-H100").ok());
  auto bad = FindClusterPreset("dgx-h10");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("did you mean dgx-h100"), std::string::npos);
  EXPECT_NE(bad.status().message().find("mi300x"), std::string::npos);
}

TEST(ClusterTest, RanksMapToNodesRailsAndSus) {
  Cluster c = Preset("dgx-h100", 64);
  EXPECT_EQ(c.num_gpus(), 512);
  EXPECT_EQ(c.NodeOf(263), 32);  // 263 = 32 * 8 + 7
  EXPECT_EQ(c.LocalOf(263), 7);
  EXPECT_EQ(c.SuOf(263), 1);
  EXPECT_EQ(c.SuOf(255), 0);
  EXPECT_EQ(c.RailOf(5), 5);
  // 8 GPUs share 4 NICs: GPUs 0,1 -> NIC 0, ..., 6,7 -> NIC 3.
  Cluster p = Preset("h100-pcie");
  EXPECT_EQ(p.RailOf(0), 0);
  EXPECT_EQ(p.RailOf(1), 0);
  EXPECT_EQ(p.RailOf(2), 1);
  EXPECT_EQ(p.RailOf(7), 3);
  // 4 NICs x 50 GB/s x 0.94 shared by 8 GPUs.
  EXPECT_NEAR(p.NicShareBytesPerS(), 4 * 50e9 * 0.94 / 8, 1);
  EXPECT_NEAR(c.NicShareBytesPerS(), 47e9, 1);
}

TEST(ClusterTest, ValidateNamesTheBadField) {
  Cluster c = Preset("dgx-h100");
  c.node.nic_bytes_per_s = -1;
  EXPECT_NE(Validate(c).message().find("network.nic_Gbps"), std::string::npos);
  c = Preset("dgx-h100");
  c.node.scale_up_efficiency = 1.5;
  EXPECT_NE(Validate(c).message().find("scale_up.efficiency"), std::string::npos);
  c = Preset("dgx-h100");
  c.num_nodes = 8193;  // 65,544 GPUs > 65,536
  EXPECT_EQ(Validate(c).code(), StatusCode::kInvalidArgument);
  c.num_nodes = 8192;
  EXPECT_TRUE(Validate(c).ok());
  c = Preset("h100-pcie");
  c.node.gpus_per_node = 7;
  EXPECT_NE(Validate(c).message().find("pairs"), std::string::npos);
}

TEST(ClusterTest, NamesRoundTrip) {
  for (auto f : {ScaleUpFabric::kNvSwitch, ScaleUpFabric::kNvLinkBridge, ScaleUpFabric::kFullMesh,
                 ScaleUpFabric::kPcieOnly}) {
    EXPECT_EQ(*ParseFabric(FabricName(f)), f);
  }
  EXPECT_FALSE(ParseFabric("infiniband").ok());
  EXPECT_EQ(LinkClassName(LinkClass::kRail), "rail");
  EXPECT_TRUE(IsNetwork(LinkClass::kSpine));
  EXPECT_FALSE(IsNetwork(LinkClass::kScaleUp));
}

}  // namespace
}  // namespace infralens::cluster
