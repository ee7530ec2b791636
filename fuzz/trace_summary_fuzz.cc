// libFuzzer target for the merge of trace summaries (`trace analyze --summaries`, trace/summary.h):
// any input must give an analysis or an error value, never a crash, hang or runaway allocation.
// The input is merged alone, and as two summaries with clock alignment (the cross-rank parts).
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/json_writer.h"
#include "trace/report.h"
#include "trace/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool pair : {false, true}) {
    std::vector<trace::SummaryText> summaries = {{"a.json", text}};
    if (pair) summaries.push_back({"b.json", text});
    auto a = trace::AnalyzeSummaries(summaries, /*align_clocks=*/pair);
    if (a.ok()) {
      JsonWriter w;
      trace::WriteAnalysisJson(w, *a);
    }
  }
  return 0;
}
