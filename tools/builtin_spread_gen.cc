// Build-time generator of plan::BuiltinSpread (plan/validate.h): validates the built-in published
// runs (data/published/calibration.csv, embedded) under the built-in efficiency constants once,
// when the engine is built, and writes a C++ source that returns the result as a constant. Every
// `plan` answer prints this spread; computing it at start-up cost about 0.13 CPU-s per process
// (issue 21), paid again by every CLI call, server start and test process.
//   builtin_spread_gen OUT.cc
// The doubles are written as hexadecimal floating literals, so the constant is bit for bit what
// the validation computed (plan/validate_test.cc recomputes it and compares).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/atomic_file.h"
#include "plan/validate.h"

// What this program computes, so it cannot link the generated definition. The engine's code that
// prints a plan refers to it, and a unity build puts that code in the same objects as the
// validation linked here; the generator never prints a plan, so its definition is never reached.
namespace infralens::plan {
const ErrorSpread& BuiltinSpread() {
  std::fprintf(stderr, "builtin_spread_gen: BuiltinSpread() called while generating it\n");
  std::abort();
}
const std::vector<GroupSpread>& BuiltinGroupSpreads() {
  std::fprintf(stderr, "builtin_spread_gen: BuiltinGroupSpreads() called while generating it\n");
  std::abort();
}
}  // namespace infralens::plan

int main(int argc, char** argv) {
  using namespace infralens;
  if (argc != 2) {
    std::fprintf(stderr, "usage: builtin_spread_gen OUT.cc\n");
    return 2;
  }
  auto runs = plan::ReadPublishedRuns(plan::BundledPublishedRuns());
  if (!runs.ok()) {
    std::fprintf(stderr, "builtin_spread_gen: data/published/calibration.csv: %s\n",
                 runs.status().message().c_str());
    return 1;
  }
  const plan::Validation v = plan::ValidateRuns(*runs);
  const plan::ErrorSpread s = plan::SpreadOf(v);
  auto literal = [](const plan::ErrorSpread& e) {
    return fmt::format("{{{}, {:a}, {:a}, {}}}", e.rows, e.median_abs, e.p80_abs, e.predicted_fast);
  };
  std::string groups;
  for (const plan::GroupSpread& g : plan::GroupSpreadsOf(v)) {
    // Framework and GPU names are identifiers from the built-in tables: no quotes to escape.
    groups += fmt::format("      {{\"{}\", \"{}\", {}, {:a}}},\n", g.framework, g.gpu,
                          literal(g.spread), g.median_error);
  }
  std::string text = fmt::format(
      "// Generated at build time by tools/builtin_spread_gen.cc: do not edit.\n"
      "// The spread of the built-in published runs under the built-in constants:\n"
      "// {} runs predicted, median |error| {:.4f}, p80 |error| {:.4f}, {} ran slower.\n"
      "#include \"plan/validate.h\"\n\n"
      "namespace infralens::plan {{\n\n"
      "const ErrorSpread& BuiltinSpread() {{\n"
      "  static const ErrorSpread kSpread{};\n"
      "  return kSpread;\n"
      "}}\n\n",
      s.rows, s.median_abs, s.p80_abs, s.predicted_fast, literal(s));
  text +=
      "const std::vector<GroupSpread>& BuiltinGroupSpreads() {\n"
      "  static const std::vector<GroupSpread> kGroups = {\n" +
      groups +
      "  };\n"
      "  return kGroups;\n"
      "}\n\n"
      "}  // namespace infralens::plan\n";
  if (Status st = WriteFileAtomically(argv[1], text); !st.ok()) {
    std::fprintf(stderr, "builtin_spread_gen: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
