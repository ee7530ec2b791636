// Kernel classes, as Holistic Trace Analysis defines them (hta/utils/utils.py: is_comm_kernel,
// is_memory_kernel, get_kernel_type): communication, memory copy/set, and computation = every
// other GPU event. Patterns are regular expressions matched anywhere in the name, which the user
// may replace for custom kernels. They run on RE2 (Debian's libre2), whose matching time is
// linear in the name whatever the pattern: with std::regex, '(a+)+$' took 30 s on a 29-character
// name (issue 26). RE2's syntax is ECMAScript's without backreferences and lookaround.
#ifndef INFRALENS_TRACE_KERNEL_CLASS_H_
#define INFRALENS_TRACE_KERNEL_CLASS_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/model.h"

namespace re2 {
class RE2;
}

namespace infralens::trace {

enum class KernelClass : uint8_t { kCompute = 0, kCommunication = 1, kMemory = 2 };

std::string_view KernelClassName(KernelClass c);

// HTA's NCCL_KERNEL_RE ("^nccl.*Kernel": ncclKernel_*, ncclDevKernel_*, ncclSymkDevKernel_*),
// widened to RCCL and HCCL (Ascend hcom_*) kernel names.
inline constexpr std::string_view kDefaultCommPattern = "^(nccl|rccl).*Kernel|hccl|HCCL|^hcom_";
// HTA's MEMORY_KERNEL_RE; Kineto's gpu_memcpy / gpu_memset categories count as memory too.
inline constexpr std::string_view kDefaultMemoryPattern = "^(Memcpy|Memset|dma)";
// HTA-compatible mode: HTA's own patterns, names only.
inline constexpr std::string_view kHtaCommPattern = "^nccl.*Kernel";
inline constexpr std::string_view kHtaMemoryPattern = "^(Memcpy|Memset|dma)";

class KernelClassifier {
 public:
  // Empty patterns select the defaults (or HTA's in hta_compat mode). InvalidArgument names a bad
  // regular expression.
  static StatusOr<KernelClassifier> Create(bool hta_compat, const std::string& comm_pattern,
                                           const std::string& memory_pattern);
  KernelClass Classify(std::string_view name, GpuCat cat) const;

  const std::string& comm_pattern() const { return comm_text_; }
  const std::string& memory_pattern() const { return memory_text_; }

 private:
  bool hta_compat_ = false;
  std::string comm_text_, memory_text_;
  std::shared_ptr<const re2::RE2> comm_, memory_;
};

}  // namespace infralens::trace

#endif  // INFRALENS_TRACE_KERNEL_CLASS_H_
