// Byte sizes with units, as the CLI accepts and prints them. Decimal prefixes are powers of 1000
// (KB, MB, GB, TB: as disk and network vendors and nccl-tests' GB/s use them); binary prefixes are
// powers of 1024 (KiB, MiB, GiB, TiB: IEC 80000-13). "B" is always bytes, never bits.
#ifndef INFRALENS_BASE_UNITS_H_
#define INFRALENS_BASE_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace infralens {

// The largest size ParseBytes accepts: 1 PiB (2^50 bytes). Far above any one collective's
// message, and small enough that bytes * 2(n-1) for n <= 65,536 stays exact in a double.
inline constexpr int64_t kMaxParsedBytes = int64_t{1} << 50;

// Parses "1GiB", "1.5 GB", "4096", "64KiB", "2 MB" (unit letters case-insensitive, blanks allowed
// between number and unit; a bare number is bytes). The value must be a whole number of bytes,
// > 0 and <= kMaxParsedBytes. InvalidArgument names the text and the accepted units.
StatusOr<int64_t> ParseBytes(std::string_view text);

// Short human form: binary when the value in its largest binary unit is exact to 3 decimals
// ("1 GiB", "1.75 GiB", "1.5 KiB"), otherwise decimal with 4 significant digits ("1 GB", "123 B").
std::string FormatBytes(int64_t bytes);

}  // namespace infralens

#endif  // INFRALENS_BASE_UNITS_H_
