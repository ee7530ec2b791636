#include "plan/pipeline_p2p.h"

#include <string>

#include "base/enum_names.h"

namespace infralens::plan {

namespace {

constexpr EnumName<P2pWait> kP2pWaitNames[] = {
    {P2pWait::kOverlapped, "no"},
    {P2pWait::kBlocking, "yes"},
    {P2pWait::kBlockingSingleChunk, "single_chunk"},
};

}  // namespace

StatusOr<P2pWait> ParseP2pWait(std::string_view name) {
  if (auto w = ValueIn(kP2pWaitNames, name)) return *w;
  return InvalidArgument("p2p_blocking '" + std::string(name) +
                         "': expected yes, no or single_chunk");
}

const char* P2pWaitName(P2pWait w) { return NameIn(kP2pWaitNames, w); }

bool P2pBlocks(P2pWait w, int chunks_per_rank) {
  switch (w) {
    case P2pWait::kOverlapped:
      return false;
    case P2pWait::kBlocking:
      return true;
    case P2pWait::kBlockingSingleChunk:
      return chunks_per_rank == 1;
  }
  return false;
}

}  // namespace infralens::plan
