#include "hw/gpu.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace infralens::hw {

namespace {

constexpr double kT = 1e12;                    // tera, decimal (FLOP/s, bytes/s)
constexpr double kG = 1e9;                     // giga, decimal (bytes/s)
constexpr double kGiB = 1024.0 * 1024 * 1024;  // HBM capacity (see gpu.h)

std::vector<Gpu> Build() {
  std::vector<Gpu> g;
  // NVIDIA A100 Tensor Core GPU datasheet (2021), SXM columns: BF16 312 TFLOPS (624 with sparsity),
  // no FP8; 40GB HBM2 at 1,555 GB/s, 80GB HBM2e at 2,039 GB/s; NVLink 600 GB/s (both directions);
  // HGX A100 joins 8 GPUs through NVSwitch.
  g.push_back({"A100-40GB",
               "NVIDIA",
               "NVIDIA A100 datasheet (SXM4 40GB)",
               312 * kT,
               0,
               40 * kGiB,
               1555 * kG,
               300 * kG,
               8,
               {"A100-SXM4-40GB", "A100-SXM-40GB"}});
  // SMs: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: 108 SMs on the A100
  // (of 128 on the full GA100).
  g.back().sms = 108;
  // Host link: the A100 datasheet's "PCIe Gen4: 64GB/s" (both directions), 32 GB/s each way.
  g.back().host_link_bytes_per_s = 32 * kG;
  g.push_back({"A100-80GB",
               "NVIDIA",
               "NVIDIA A100 datasheet (SXM4 80GB)",
               312 * kT,
               0,
               80 * kGiB,
               2039 * kG,
               300 * kG,
               8,
               {"A100-SXM4-80GB", "A100-SXM-80GB"}});
  // SMs: as A100-40GB: the same GA100 configuration.
  g.back().sms = 108;
  g.back().host_link_bytes_per_s = 32 * kG;  // as A100-40GB
  // NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: BF16 1,979 and FP8 3,958 TFLOPS with sparsity,
  // i.e. 989.4 and 1,978.9 dense (H100 architecture whitepaper, Table 3); 80GB HBM3 at 3.35 TB/s;
  // NVLink 900 GB/s (18 links x 50 GB/s, both directions); HGX H100 joins 8 GPUs.
  g.push_back({"H100-SXM",
               "NVIDIA",
               "NVIDIA H100 datasheet (SXM) and H100 whitepaper Table 3",
               989.4 * kT,
               1978.9 * kT,
               80 * kGiB,
               3350 * kG,
               450 * kG,
               8,
               {"H100", "H100-SXM5", "H100-SXM5-80GB", "H100-80GB-HBM3"}});
  // SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3: H100 SXM5 132 SMs (of
  // 144 on the full GH100).
  g.back().sms = 132;
  // Host link: the H100 datasheet's "PCIe Gen5: 128GB/s" (both directions), 64 GB/s each way.
  g.back().host_link_bytes_per_s = 64 * kG;
  // Same datasheet, H100 PCIe: BF16 1,513 and FP8 3,026 TFLOPS with sparsity (756.5 and 1,513
  // dense); 80GB HBM2e at 2 TB/s; an NVLink bridge of 600 GB/s joins pairs of cards.
  g.push_back({"H100-PCIe",
               "NVIDIA",
               "NVIDIA H100 datasheet (PCIe)",
               756.5 * kT,
               1513 * kT,
               80 * kGiB,
               2000 * kG,
               300 * kG,
               2,
               {"H100-PCIe-80GB"}});
  // SMs: H100 whitepaper, Table 3: H100 PCIe 114 SMs.
  g.back().sms = 114;
  g.back().host_link_bytes_per_s = 64 * kG;  // the same datasheet's PCIe Gen5, 128 GB/s both ways
  // The H100 parts of torchtitan's benchmarks (Liang et al. 2024, "TorchTitan", arXiv 2410.06511,
  // sec. 3.3): "non-standard. They have HBM2e and are limited to a lower TDP. The actual peak
  // TFLOPs should be between SXM and NVL, and we don't know the exact value"; 96 GB, 500 W (its
  // benchmark notes). No datasheet exists. The math is the lower end the paper allows, the H100
  // NVL datasheet's (BF16 1,671 and FP8 3,341 TFLOPS with sparsity, 835.5 and 1,670.5 dense); the
  // HBM2e's bandwidth is what torchtitan's benchmark page states, "96GB HBM2e with 2.4 TB/sec peak
  // memory bandwidth" at the "default 500W power limit" (pytorch/torchtitan
  // benchmarks/llama3_h100_202412_torchtitan.md, Hardware); NVLink as the SXM part (HGX board).
  g.push_back({"H100-96GB",
               "NVIDIA",
               "TorchTitan paper sec. 3.3 (non-standard H100, HBM2e, lower TDP); math: H100 NVL "
               "datasheet; 2.4 TB/s: torchtitan benchmarks",
               835.5 * kT,
               1670.5 * kT,
               96 * kGiB,
               2400 * kG,
               450 * kG,
               8,
               {"H100-96GB-HBM2e", "H100-HBM2e"}});
  // SMs: an SXM-board part (HGX, 8 GPUs over NVLink): the H100 SXM5's GH100 configuration, 132 SMs
  // (H100 whitepaper, Table 3); the H100 NVL also enables 132.
  g.back().sms = 132;
  g.back().host_link_bytes_per_s = 64 * kG;  // PCIe Gen5 x16, as every H100
  // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: the H100 SXM's math (BF16 1,979 / FP8 3,958
  // TFLOPS with sparsity); 141GB HBM3e at 4.8 TB/s; NVLink 900 GB/s; HGX H200 joins 8 GPUs.
  g.push_back({"H200",
               "NVIDIA",
               "NVIDIA H200 datasheet (SXM)",
               989.4 * kT,
               1978.9 * kT,
               141 * kGiB,
               4800 * kG,
               450 * kG,
               8,
               {"H200-SXM", "H200-SXM-141GB"}});
  // SMs: the H100 SXM5's GH100 die with HBM3e: 132 SMs (H100 whitepaper, Table 3; the H200
  // datasheet changes memory only).
  g.back().sms = 132;
  // Host link: the H200 datasheet's "PCIe Gen5: 128GB/s" (both directions).
  g.back().host_link_bytes_per_s = 64 * kG;
  // NVIDIA DGX B200 / HGX B200 datasheets, per GPU of eight: FP8 72 PFLOPS and BF16 36 PFLOPS per
  // 8 GPUs with sparsity (4.5 and 2.25 PFLOPS dense each); 1,440GB HBM3e in total (180GB each) at
  // 64 TB/s (8 TB/s each); fifth-generation NVLink 1.8 TB/s per GPU (both directions).
  g.push_back({"B200",
               "NVIDIA",
               "NVIDIA DGX B200 / HGX B200 datasheets (per GPU of 8)",
               2250 * kT,
               4500 * kT,
               180 * kGiB,
               8000 * kG,
               900 * kG,
               8,
               {"B200-SXM", "HGX-B200", "DGX-B200"}});
  // SMs: two dies of 74 enabled SMs each, 148 per GPU (CUDA's multiProcessorCount on a B200, as
  // reported by Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling", 2025;
  // Megatron-Core's moe_deepep_num_sms default of 20 SMs is sized against it).
  g.back().sms = 148;
  // Host link: PCIe Gen5 x16 to the host CPUs, 64 GB/s each way (DGX B200 datasheet: two Intel
  // Xeon Platinum 8570 hosts, PCIe Gen5).
  g.back().host_link_bytes_per_s = 64 * kG;
  // NVIDIA GB200 NVL72 datasheet, per GPU of 72: FP8 720 PFLOPS and BF16 360 PFLOPS per rack with
  // sparsity (5 and 2.5 PFLOPS dense each); up to 13.4 TB HBM3e at 576 TB/s per rack (186GB and
  // 8 TB/s each); 130 TB/s of NVLink per rack, 1.8 TB/s per GPU (both directions), all 72 in one
  // NVLink domain.
  g.push_back({"GB200",
               "NVIDIA",
               "NVIDIA GB200 NVL72 datasheet (per GPU of 72)",
               2500 * kT,
               5000 * kT,
               186 * kGiB,
               8000 * kG,
               900 * kG,
               72,
               {"GB200-NVL72", "B200-NVL72"}});
  // SMs: the same Blackwell GPU as B200 (two dies, 148 SMs enabled), run at a higher power limit.
  g.back().sms = 148;
  // Host link: NVLink-C2C, 900 GB/s both directions between a Grace CPU and the two Blackwell GPUs
  // of its GB200 superchip (GB200 NVL72 datasheet), so 225 GB/s each way per GPU when both copy.
  g.back().host_link_bytes_per_s = 225 * kG;
  // AMD Instinct MI300X accelerator data sheet: peak BF16 1,307.4 TFLOPS and FP8 2,614.9 TFLOPS
  // dense (twice that with sparsity); 192GB HBM3 at 5.3 TB/s; 7 Infinity Fabric links of 128 GB/s
  // (both directions), 448 GB/s each way; the MI300X platform joins 8 GPUs.
  g.push_back({"MI300X",
               "AMD",
               "AMD Instinct MI300X data sheet",
               1307.4 * kT,
               2614.9 * kT,
               192 * kGiB,
               5300 * kG,
               448 * kG,
               8,
               {"Instinct-MI300X", "AMD-MI300X"}});
  // SMs: AMD Instinct MI300X data sheet: 304 compute units (8 XCDs of 38).
  g.back().sms = 304;
  // Host link: the same data sheet's PCIe Gen 5 x16, 128 GB/s both directions.
  g.back().host_link_bytes_per_s = 64 * kG;
  return g;
}

}  // namespace

const std::vector<Gpu>& GpuPresets() {
  static const auto* const kGpus = new std::vector<Gpu>(Build());
  return *kGpus;
}

StatusOr<Gpu> FindGpu(std::string_view name) {
  const std::string key = AlnumKey(name);
  std::vector<std::string> names;
  for (const Gpu& g : GpuPresets()) {
    if (KeyNames(key, g.name, g.aliases)) return g;
    names.push_back(g.name);
  }
  return InvalidArgument(fmt::format("‹gpu› {}: unknown GPU{} (GPUs: {})", name,
                                     DidYouMean(key, names), Join(names, ", ")));
}

StatusOr<Gpu> GpuForDeviceName(std::string_view device_name, int64_t total_global_mem_bytes) {
  // Rule 1 (gpu.h): the names the runtime reports for the parts the presets model, as
  // nvidia-smi and torch.cuda.get_device_name() print them on DGX / HGX systems.
  struct Exact {
    std::string_view device_name, preset;
  };
  static constexpr Exact kExact[] = {
      {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
      {"NVIDIA A100-SXM-80GB", "A100-80GB"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM"},
      {"NVIDIA H100 PCIe", "H100-PCIe"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA B200", "B200"},
      {"NVIDIA GB200", "GB200"},
      {"AMD Instinct MI300X", "MI300X"},
  };
  const std::string key = AlnumKey(device_name);
  for (const Exact& e : kExact) {
    if (AlnumKey(e.device_name) == key) return FindGpu(e.preset);
  }
  // Rule 2: the memory size from totalGlobalMem, in GiB (binary, as gpu.h counts HBM).
  const double gib = static_cast<double>(total_global_mem_bytes) / kGiB;
  if (total_global_mem_bytes > 0) {
    if (key == AlnumKey("NVIDIA A100")) return FindGpu(gib < 60 ? "A100-40GB" : "A100-80GB");
    if (key == AlnumKey("NVIDIA H100") && gib < 88) return FindGpu("H100-SXM");
    if (key == AlnumKey("NVIDIA H100") && gib < 100) return FindGpu("H100-96GB");
  }
  return NotFound(fmt::format(
      "device '{}'{} matches no GPU preset", device_name,
      total_global_mem_bytes > 0 ? fmt::format(" with {:.1f} GiB", gib) : std::string()));
}

}  // namespace infralens::hw
