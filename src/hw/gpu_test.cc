// GPU preset lookup and the datasheet conventions (dense = half the sparse figure, GiB capacity,
// per-direction scale-up bandwidth).
#include "hw/gpu.h"

#include <gtest/gtest.h>

namespace infralens::hw {
namespace {

TEST(GpuTest, LookupIgnoresCaseAndPunctuation) {
  for (const char* name :
       {"H100-SXM", "h100_sxm", "H100 SXM", "h100sxm", "H100-SXM5-80GB", "H100"}) {
    auto g = FindGpu(name);
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().message();
    EXPECT_EQ(g->name, "H100-SXM");
  }
  EXPECT_EQ(FindGpu("A100-80GB")->name, "A100-80GB");
  EXPECT_EQ(FindGpu("a100_40gb")->name, "A100-40GB");
  EXPECT_EQ(FindGpu("mi300x")->name, "MI300X");
  EXPECT_EQ(FindGpu("GB200 NVL72")->name, "GB200");
}

TEST(GpuTest, UnknownGpuSuggests) {
  auto g = FindGpu("H100-SMX");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("did you mean 'H100-SXM'?"), std::string::npos)
      << g.status().message();
  EXPECT_EQ(FindGpu("").status().code(), StatusCode::kInvalidArgument);
  // "A100" alone is ambiguous (40 or 80 GB): no silent pick.
  EXPECT_FALSE(FindGpu("A100").ok());
}

TEST(GpuTest, DatasheetFigures) {
  // H100 SXM datasheet: BF16 1,979 and FP8 3,958 TFLOPS with sparsity; dense is half.
  const Gpu h100 = *FindGpu("H100-SXM");
  EXPECT_NEAR(h100.bf16_flops_per_s, 1979e12 / 2, 1e12);
  EXPECT_NEAR(h100.fp8_flops_per_s, 3958e12 / 2, 1e12);
  EXPECT_DOUBLE_EQ(h100.hbm_bytes, 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(h100.hbm_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.scaleup_bytes_per_s, 900e9 / 2);  // 900 GB/s counts both directions
  EXPECT_EQ(h100.scaleup_domain_gpus, 8);
  const Gpu a100 = *FindGpu("A100-40GB");
  EXPECT_DOUBLE_EQ(a100.bf16_flops_per_s, 312e12);
  EXPECT_EQ(a100.fp8_flops_per_s, 0);  // Ampere has no FP8 tensor cores
  EXPECT_DOUBLE_EQ(a100.hbm_bytes_per_s, 1555e9);
  EXPECT_DOUBLE_EQ(FindGpu("A100-80GB")->hbm_bytes_per_s, 2039e9);
  EXPECT_DOUBLE_EQ(FindGpu("H200")->hbm_bytes, 141.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(FindGpu("H200")->hbm_bytes_per_s, 4.8e12);
  EXPECT_EQ(FindGpu("GB200")->scaleup_domain_gpus, 72);
  EXPECT_EQ(FindGpu("H100-PCIe")->scaleup_domain_gpus, 2);
  const Gpu mi = *FindGpu("MI300X");
  EXPECT_DOUBLE_EQ(mi.bf16_flops_per_s, 1307.4e12);
  EXPECT_DOUBLE_EQ(mi.hbm_bytes, 192.0 * (1 << 30));
  // SM counts: A100 whitepaper Table 1 (108), H100 whitepaper Table 3 (SXM5 132, PCIe 114),
  // Blackwell 2 x 74, MI300X data sheet 304 CUs.
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(h100.sms, 132);
  EXPECT_EQ(FindGpu("H100-PCIe")->sms, 114);
  EXPECT_EQ(FindGpu("H100-96GB")->sms, 132);
  EXPECT_EQ(FindGpu("H200")->sms, 132);
  EXPECT_EQ(FindGpu("B200")->sms, 148);
  EXPECT_EQ(FindGpu("GB200")->sms, 148);
  EXPECT_EQ(mi.sms, 304);
  // Host links, per direction: the datasheets' PCIe figures are both directions (A100 Gen4 64
  // GB/s, H100 Gen5 128 GB/s), and GB200's 900 GB/s NVLink-C2C joins one Grace CPU to two GPUs.
  EXPECT_EQ(FindGpu("A100-80GB")->host_link_bytes_per_s, 64e9 / 2);
  EXPECT_EQ(FindGpu("H100-SXM")->host_link_bytes_per_s, 128e9 / 2);
  EXPECT_EQ(FindGpu("GB200")->host_link_bytes_per_s, 900e9 / 2 / 2);
}

TEST(GpuTest, EveryPresetIsComplete) {
  for (const Gpu& g : GpuPresets()) {
    EXPECT_GT(g.bf16_flops_per_s, 0) << g.name;
    EXPECT_GT(g.hbm_bytes, 0) << g.name;
    EXPECT_GT(g.hbm_bytes_per_s, 0) << g.name;
    EXPECT_GT(g.scaleup_bytes_per_s, 0) << g.name;
    EXPECT_GT(g.scaleup_domain_gpus, 0) << g.name;
    EXPECT_GT(g.sms, 0) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
    // Where FP8 exists its dense rate is twice BF16's on every listed part.
    if (g.fp8_flops_per_s > 0) {
      EXPECT_NEAR(g.fp8_flops_per_s / g.bf16_flops_per_s, 2.0, 0.01) << g.name;
    }
  }
}

// The names the CUDA runtime reports (nvidia-smi --query-gpu=name, torch.cuda.get_device_name)
// on the systems the presets model, with the totalGlobalMem they report.
TEST(GpuTest, DeviceNamesMapToPresets) {
  struct Case {
    const char* name;
    int64_t mem;
    const char* preset;  // "" = no preset
  };
  const Case cases[] = {
      {"NVIDIA A100-SXM4-40GB", 42505273344, "A100-40GB"},
      {"NVIDIA A100-SXM4-80GB", 85198045184, "A100-80GB"},
      {"NVIDIA A100-SXM-80GB", 85198045184, "A100-80GB"},
      {"NVIDIA H100 80GB HBM3", 85029158912, "H100-SXM"},
      {"nvidia h100 80gb hbm3", -1, "H100-SXM"},  // case and memory do not matter here
      {"NVIDIA H100 PCIe", 85029158912, "H100-PCIe"},
      {"NVIDIA H200", 150754820096, "H200"},
      {"NVIDIA B200", 191537545216, "B200"},
      {"NVIDIA GB200", 197568495616, "GB200"},
      {"AMD Instinct MI300X", 206141652992, "MI300X"},
      // The memory tells the size where the name does not: 40 GiB and 80 GiB A100s, 80 GiB and
      // 96 GiB H100s (96 x 2^30 = 103079215104 bytes, a little less usable).
      {"NVIDIA A100", 42505273344, "A100-40GB"},
      {"NVIDIA A100", 85198045184, "A100-80GB"},
      {"NVIDIA H100", 85029158912, "H100-SXM"},
      {"NVIDIA H100", 101468602368, "H100-96GB"},
      // Parts no preset models, and names without the memory that would tell them apart.
      {"NVIDIA A100 80GB PCIe", 85198045184, ""},
      {"NVIDIA H100 NVL", 100485038080, ""},
      {"NVIDIA H100", -1, ""},
      {"NVIDIA H100", 150754820096, ""},
      {"Tesla V100-SXM2-32GB", 34089730048, ""},
      {"", -1, ""},
  };
  for (const Case& c : cases) {
    auto g = GpuForDeviceName(c.name, c.mem);
    if (std::string(c.preset).empty()) {
      ASSERT_FALSE(g.ok()) << c.name << " -> " << g->name;
      EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
      EXPECT_NE(g.status().message().find(std::string("'") + c.name + "'"), std::string::npos)
          << g.status().message();
    } else {
      ASSERT_TRUE(g.ok()) << c.name << ": " << g.status().message();
      EXPECT_EQ(g->name, c.preset) << c.name;
    }
  }
}

}  // namespace
}  // namespace infralens::hw
