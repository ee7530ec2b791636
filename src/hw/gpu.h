// GPU presets: peak dense math rates, HBM capacity and bandwidth, scale-up (NVLink / Infinity
// Fabric) bandwidth and the size of the scale-up domain, each from the vendor's datasheet (cited
// beside each entry in gpu.cc).
//
// Conventions, so that figures from different datasheets compare:
//   * FLOP/s are dense (no 2:4 sparsity). NVIDIA datasheets print sparse figures with an asterisk;
//     the dense rate is half.
//   * HBM capacity is in bytes, as binary units: an "80GB" H100 has 80 GiB (nvidia-smi reports
//     81559 MiB usable of 81920 MiB). Bandwidths are decimal (1 TB/s = 1e12 bytes/s).
//   * Scale-up bandwidth is per GPU and per direction: NVIDIA's "900 GB/s NVLink" for H100 is the
//     sum of both directions (18 links x 50 GB/s bidirectional), so 450 GB/s each way. A ring
//     all-reduce's bus bandwidth approaches the per-direction figure.
#ifndef INFRALENS_HW_GPU_H_
#define INFRALENS_HW_GPU_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace infralens::hw {

struct Gpu {
  std::string name;                // canonical preset name, e.g. "H100-SXM"
  std::string vendor;              // "NVIDIA", "AMD"
  std::string source;              // datasheet the figures come from
  double bf16_flops_per_s = 0;     // dense BF16 tensor-core peak
  double fp8_flops_per_s = 0;      // dense FP8 peak; 0 when the GPU has no FP8 tensor cores
  double hbm_bytes = 0;            // device memory capacity
  double hbm_bytes_per_s = 0;      // device memory bandwidth
  double scaleup_bytes_per_s = 0;  // NVLink / Infinity Fabric per GPU, per direction
  int scaleup_domain_gpus = 0;     // GPUs that reach each other over the scale-up fabric
  std::vector<std::string> aliases;
  // Streaming multiprocessors (AMD: compute units) enabled on the part: a GEMM's output tiles run
  // in waves of this many (plan/gemm_time.h). 0 = unknown: no wave quantisation.
  int sms = 0;
  // The link between the GPU and its host's memory, bytes/s per GPU per direction when every GPU
  // of the board copies at once (PCIe x16 of the GPU's generation, or NVLink-C2C to a Grace CPU
  // shared by the GPUs beside it): what activation offloading copies over (plan/cpu_offload.h).
  double host_link_bytes_per_s = 0;
};

// Every preset, in the order `infralens presets --kind gpus` lists them.
const std::vector<Gpu>& GpuPresets();

// Case-insensitive, ignoring punctuation and spaces: "H100-SXM", "h100_sxm" and "H100 SXM5" match.
// InvalidArgument with a did-you-mean and the list of names otherwise.
StatusOr<Gpu> FindGpu(std::string_view name);

// The preset a device name reported by the CUDA / HIP runtime stands for: the "name" of a
// Kineto trace's deviceProperties (cudaGetDeviceProperties' prop.name), with its totalGlobalMem
// in bytes (-1 when unknown) to tell memory sizes apart where the name does not say. The rules,
// in order (names compared ignoring case, spaces and punctuation, as FindGpu does):
//   1. an exact name: "NVIDIA A100-SXM4-40GB" -> A100-40GB, "NVIDIA A100-SXM4-80GB" and
//      "NVIDIA A100-SXM-80GB" -> A100-80GB, "NVIDIA H100 80GB HBM3" -> H100-SXM (the SXM5 part),
//      "NVIDIA H100 PCIe" -> H100-PCIe, "NVIDIA H200" -> H200, "NVIDIA B200" -> B200,
//      "NVIDIA GB200" -> GB200, "AMD Instinct MI300X" -> MI300X;
//   2. a name without the memory size, told apart by totalGlobalMem: "NVIDIA A100" under 60 GiB
//      -> A100-40GB, from 60 GiB -> A100-80GB; "NVIDIA H100" under 88 GiB -> H100-SXM, 88 to
//      100 GiB -> H100-96GB (torchtitan's HBM2e part, gpu.cc);
//   3. anything else (e.g. "NVIDIA A100 80GB PCIe", "NVIDIA H100 NVL": parts no preset models)
//      is NotFound naming the name and the memory.
StatusOr<Gpu> GpuForDeviceName(std::string_view device_name, int64_t total_global_mem_bytes);

}  // namespace infralens::hw

#endif  // INFRALENS_HW_GPU_H_
