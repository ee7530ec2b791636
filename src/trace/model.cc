#include "trace/model.h"

namespace infralens::trace {

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
