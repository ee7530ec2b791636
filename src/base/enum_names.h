// The names of an enum's values, written once as a table ({value, name} rows, or {value, name,
// title} where the values have a title for people too): the name (title) of a value and the value
// of a name. Unlike a switch, the compiler does not see a value a table leaves out:
// the table stands beside the enum's other per-value code and its tests name every value.
#ifndef INFRALENS_BASE_ENUM_NAMES_H_
#define INFRALENS_BASE_ENUM_NAMES_H_

#include <cstddef>
#include <optional>
#include <string_view>

namespace infralens {

template <typename E>
struct EnumName {
  E value;
  const char* name;
  const char* title = nullptr;
};

// The name `table` gives `value`, or `missing` when the table does not list it.
template <typename E, size_t N>
constexpr const char* NameIn(const EnumName<E> (&table)[N], E value, const char* missing = "?") {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return missing;
}

// The title `table` gives `value`, or `missing` when the table does not list it.
template <typename E, size_t N>
constexpr const char* TitleIn(const EnumName<E> (&table)[N], E value, const char* missing = "?") {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.title;
  }
  return missing;
}

// The value `table` names `name` (compared as it is), or nullopt.
template <typename E, size_t N>
constexpr std::optional<E> ValueIn(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& e : table) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

}  // namespace infralens

#endif  // INFRALENS_BASE_ENUM_NAMES_H_
