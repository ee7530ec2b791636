#include "trace/kernel_class.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include "base/enum_names.h"

namespace infralens::trace {

constexpr EnumName<KernelClass> kKernelClassNames[] = {
    {KernelClass::kCompute, "computation"},
    {KernelClass::kCommunication, "communication"},
    {KernelClass::kMemory, "memory"}};

std::string_view KernelClassName(KernelClass c) { return NameIn(kKernelClassNames, c); }

namespace {

// A pattern compiled by RE2, or InvalidArgument naming the flag and RE2's reason.
StatusOr<std::shared_ptr<const re2::RE2>> Compile(std::string_view flag, const std::string& text) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the error is returned, not printed
  auto re = std::make_shared<const re2::RE2>(text, options);
  if (!re->ok()) {
    return InvalidArgument(
        fmt::format("{} '{}': not a valid regular expression ({}; RE2 syntax: no backreferences or "
                    "lookaround)",
                    flag, text, re->error()));
  }
  return re;
}

}  // namespace

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
  ASSIGN_OR_RETURN(k.comm_, Compile("‹comm_kernels›", k.comm_text_));
  ASSIGN_OR_RETURN(k.memory_, Compile("‹memory_kernels›", k.memory_text_));
  return k;
}

KernelClass KernelClassifier::Classify(std::string_view name, GpuCat cat) const {
  // Kernel names beyond this length are cut (the class-defining part of a kernel name is its
  // start); RE2 needs no such bound for its time, it keeps the work per kernel small.
  if (name.size() > 2048) name = name.substr(0, 2048);
  const re2::StringPiece piece(name.data(), name.size());
  if (re2::RE2::PartialMatch(piece, *comm_)) return KernelClass::kCommunication;
  if (!hta_compat_ && (cat == GpuCat::kMemcpy || cat == GpuCat::kMemset))
    return KernelClass::kMemory;
  if (re2::RE2::PartialMatch(piece, *memory_)) return KernelClass::kMemory;
  return KernelClass::kCompute;
}

}  // namespace infralens::trace
