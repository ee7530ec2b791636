#include "trace/kernel_class.h"

#include <fmt/format.h>

namespace infralens::trace {

std::string_view KernelClassName(KernelClass c) {
  switch (c) {
    case KernelClass::kCompute:
      return "computation";
    case KernelClass::kCommunication:
      return "communication";
    case KernelClass::kMemory:
      return "memory";
  }
  return "?";
}

StatusOr<KernelClassifier> KernelClassifier::Create(bool hta_compat,
                                                    const std::string& comm_pattern,
                                                    const std::string& memory_pattern) {
  KernelClassifier k;
  k.hta_compat_ = hta_compat;
  k.comm_text_ = !comm_pattern.empty()
                     ? comm_pattern
                     : std::string(hta_compat ? kHtaCommPattern : kDefaultCommPattern);
  k.memory_text_ = !memory_pattern.empty()
                       ? memory_pattern
                       : std::string(hta_compat ? kHtaMemoryPattern : kDefaultMemoryPattern);
  if (k.comm_text_.size() > 4096 || k.memory_text_.size() > 4096) {
    return InvalidArgument("kernel pattern longer than 4096 characters");
  }
  try {
    k.comm_ = std::make_shared<const std::regex>(k.comm_text_,
                                                 std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return InvalidArgument(fmt::format("--comm-kernels '{}': not a valid regular expression ({})",
                                       k.comm_text_, e.what()));
  }
  try {
    k.memory_ = std::make_shared<const std::regex>(k.memory_text_,
                                                   std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return InvalidArgument(fmt::format("--memory-kernels '{}': not a valid regular expression ({})",
                                       k.memory_text_, e.what()));
  }
  return k;
}

KernelClass KernelClassifier::Classify(std::string_view name, GpuCat cat) const {
  // std::regex recurses per character on some patterns; kernel names beyond this length are
  // cut (the class-defining part of a kernel name is its start).
  if (name.size() > 2048) name = name.substr(0, 2048);
  if (std::regex_search(name.begin(), name.end(), *comm_)) return KernelClass::kCommunication;
  if (!hta_compat_ && (cat == GpuCat::kMemcpy || cat == GpuCat::kMemset))
    return KernelClass::kMemory;
  if (std::regex_search(name.begin(), name.end(), *memory_)) return KernelClass::kMemory;
  return KernelClass::kCompute;
}

}  // namespace infralens::trace
