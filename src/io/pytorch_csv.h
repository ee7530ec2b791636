// PyTorch's pipelining CSV, compute-only form (torch/distributed/pipelining/schedules.py,
// PipelineScheduleMulti._load_csv / _dump_csv): one row per rank, one cell per action in order,
// cells like "0F3", "1I2", "2W0", "(0F3;7B1)OVERLAP_F_B"; an empty cell is an idle slot.
#ifndef INFRALENS_IO_PYTORCH_CSV_H_
#define INFRALENS_IO_PYTORCH_CSV_H_

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "schedule/schedule.h"

namespace infralens::io {

// Largest CSV accepted, in bytes (a schedule at the 50-million-action limit is about 300 MB;
// anything a person writes or PyTorch dumps is far smaller).
inline constexpr size_t kMaxCsvBytes = 256u << 20;

// Where a cell could not be read: 1-based line and column of the text.
struct CsvErrorLocation {
  size_t line = 0;
  int column = 0;
};

// Reads a schedule. P = rows, S = highest stage + 1 (a multiple of P, each rank holding S/P
// stages), m = highest microbatch + 1. Errors name the row, column and cell (and fill *where for
// a cell that is not an action). The result still needs schedule::ValidateStructure and the
// simulator to check completeness and order.
StatusOr<schedule::Schedule> ReadPytorchCsv(std::string_view text,
                                            CsvErrorLocation* where = nullptr);

// Writes one row per rank, no idle cells; ReadPytorchCsv(WritePytorchCsv(s)) gives back s's ranks.
std::string WritePytorchCsv(const schedule::Schedule& s);

// The same bytes for a generated schedule without its action lists: `shape` comes from
// schedule::GenerateShape, each rank's row from schedule::RankActions, and `sink` receives the
// text in pieces of about 1 MiB (the memory this takes). Stops at sink's first error and
// returns it.
Status StreamPytorchCsv(const schedule::Schedule& shape,
                        const std::function<Status(std::string_view)>& sink);

}  // namespace infralens::io

#endif  // INFRALENS_IO_PYTORCH_CSV_H_
