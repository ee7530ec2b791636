#include "trace/model.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cstdint>

namespace infralens::trace {

void AdviseHugePages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  // The 2 MiB-aligned pages inside [data, data + bytes): madvise wants page-aligned ranges, and a
  // huge page must lie wholly inside the vector's own memory. Advice only: an error (THP off,
  // an old kernel) leaves ordinary pages, which is what there was before.
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin)
    static_cast<void>(madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE));
#else
  static_cast<void>(data);
  static_cast<void>(bytes);
#endif
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this == &other) return *this;
  strings_ = other.strings_;
  index_.clear();
  for (size_t i = 0; i < strings_.size(); ++i)
    index_.emplace(std::string_view(strings_[i]), static_cast<uint32_t>(i));
  return *this;
}

uint32_t StringTable::Intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(std::string_view(strings_.back()), id);
  return id;
}

}  // namespace infralens::trace
