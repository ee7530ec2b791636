// libFuzzer target: any bytes as a learner's worksheet. Parsing and interpretation return a value
// or a one-line error naming the line, never crash, hang or overflow; a design that parses is
// checked against the engine (a small model on one 8-GPU node, so evaluation stays cheap).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/cluster.h"
#include "fuzz_checks.h"
#include "hw/gpu.h"
#include "lab/worksheet.h"
#include "model/presets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace infralens;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto sheet = lab::ParseWorksheet(text);
  if (!fuzz::ValueOrOneLineError(sheet)) return 0;
  auto design = lab::InterpretWorksheet(*sheet);
  if (!design.ok()) {
    if (design.status().message().find('\n') != std::string::npos) __builtin_trap();
    if (design.status().message().rfind("line ", 0) != 0) __builtin_trap();  // errors name the line
    return 0;
  }
  static const plan::PlanRequest req = [] {
    plan::PlanRequest r;
    r.model = *model::FindPreset("tiny");
    r.cluster = *cluster::FindClusterPreset("dgx-h100");
    r.cluster.num_nodes = 1;
    r.gpu = *hw::FindGpu(r.cluster.node.gpu_model);
    r.global_batch = 16;
    return r;
  }();
  const lab::WorksheetCheck check = lab::CheckWorksheet(req, *design, nullptr);
  if (check.findings.empty()) __builtin_trap();  // every design gets an answer
  (void)lab::RenderCheckMarkdown(check);
  (void)lab::RenderCheckJson(check);
  return 0;
}
