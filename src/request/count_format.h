// Counts (parameters, tokens) in a short human form, as the text tables of `model`, `memory` and
// `presets` print them.
#ifndef INFRALENS_REQUEST_COUNT_FORMAT_H_
#define INFRALENS_REQUEST_COUNT_FORMAT_H_

#include <string>
#include <string_view>

namespace infralens::request {

// `significant` digits and a decimal K/M/B/T suffix (powers of 1000) after `separator`:
// SiCount(6738415616, 3) = "6.74B", SiCount(2820509184, 4) = "2.821B",
// SiCount(1.234e12, 4, " ") = "1.234 T"; below 1000 the number alone ("999").
std::string SiCount(double v, int significant, std::string_view separator = "");

}  // namespace infralens::request

#endif  // INFRALENS_REQUEST_COUNT_FORMAT_H_
