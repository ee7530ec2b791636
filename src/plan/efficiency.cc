#include "plan/efficiency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "base/csv.h"
#include "base/strings.h"

namespace infralens::plan {

namespace {

struct QuantityInfo {
  EfficiencyQuantity quantity;
  std::string_view name;
  double min, max;  // the value's range: [min, max], or (min, max] when !min_inclusive
  bool min_inclusive;
};

constexpr double kMinFraction = kMinEfficiencyFraction;
constexpr QuantityInfo kQuantities[] = {
    {EfficiencyQuantity::kGemm, "gemm", kMinFraction, 1, true},
    {EfficiencyQuantity::kGemmHalfDim, "gemm_half_dim", 0, 1e6, false},
    // A GEMM kernel's output tile, rows and columns (plan/gemm_time.h): CUTLASS and cuBLAS tiles
    // run from 64 to 256 a side; 1024 bounds a user's row.
    {EfficiencyQuantity::kGemmTileM, "gemm_tile_m", 1, 1024, true},
    {EfficiencyQuantity::kGemmTileN, "gemm_tile_n", 1, 1024, true},
    {EfficiencyQuantity::kAttention, "attention", kMinFraction, 1, true},
    {EfficiencyQuantity::kAttentionFa2, "attention_fa2", kMinFraction, 1, true},
    {EfficiencyQuantity::kAttentionHalfSeq, "attention_half_seq", 0, 1e6, false},
    {EfficiencyQuantity::kAttentionFa2HalfSeq, "attention_fa2_half_seq", 0, 1e6, false},
    {EfficiencyQuantity::kAttentionHalfHeadDim, "attention_half_head_dim", 0, 1e4, false},
    {EfficiencyQuantity::kAttentionFa2HalfHeadDim, "attention_fa2_half_head_dim", 0, 1e4, false},
    {EfficiencyQuantity::kHbm, "hbm", kMinFraction, 1, true},
    {EfficiencyQuantity::kScaleUpLink, "scale_up_link", kMinFraction, 1, true},
    {EfficiencyQuantity::kScaleOutLink, "scale_out_link", kMinFraction, 1, true},
    // NCCL's channels per collective: MAXCHANNELS is 64 (src/include/device.h); 1024 bounds a
    // user's row, and 0 charges nothing.
    {EfficiencyQuantity::kCollectiveChannels, "collective_channels", 0, 1024, true},
    {EfficiencyQuantity::kCollectiveChannelsScaleOut, "collective_channels_scale_out", 0, 1024,
     true},
    {EfficiencyQuantity::kHostLink, "host_link", kMinFraction, 1, true},
};

bool SameKey(const EfficiencyRow& a, const EfficiencyRow& b) {
  return a.gpu == b.gpu && a.quantity == b.quantity && a.precision == b.precision;
}

// A kernel rate that ramps as x / (x + half) (a fixed cost amortised over x), relative to its
// rate at `stated`, where the efficiency rows are stated; x is held to [lo, hi], the range the
// measurements behind `half` span. half <= 0 (no row) gives 1.
double RampScale(double x, double half, double stated, double lo, double hi) {
  if (!(half > 0)) return 1.0;
  const double held = std::clamp(x, lo, hi);
  return (held / (held + half)) / (stated / (stated + half));
}

}  // namespace

StatusOr<EfficiencyTable> EfficiencyTable::Parse(std::string_view csv, std::string_view origin) {
  if (csv.size() > kMaxEfficiencyBytes) {
    return InvalidArgument(
        fmt::format("{}: larger than the limit of {} bytes", origin, kMaxEfficiencyBytes));
  }
  const std::string text = BlankCommentLines(csv);
  auto parsed = ParseCsv(text, 100'000);
  if (!parsed.ok())
    return InvalidArgument(fmt::format("{}: {}", origin, parsed.status().message()));
  // ParseCsv drops nothing, so a row's index among the non-empty rows is not its line: count
  // lines by the newlines before each row's first field instead.
  std::vector<size_t> line_of;
  {
    size_t line = 1;
    bool at_start = true, in_quotes = false;
    for (char c : text) {
      if (at_start && c != '\n') {
        line_of.push_back(line);
        at_start = false;
      }
      if (c == '"') in_quotes = !in_quotes;
      if (c == '\n') {
        ++line;
        if (!in_quotes) at_start = true;
      }
    }
  }
  const std::vector<std::vector<std::string>>& rows = *parsed;
  std::vector<const std::vector<std::string>*> nonempty;
  for (const auto& r : rows) {
    if (r.size() == 1 && Trim(r[0]).empty()) continue;
    nonempty.push_back(&r);
  }
  if (nonempty.empty()) return InvalidArgument(fmt::format("{}: no header row", origin));
  const std::vector<std::string> kColumns = {"gpu", "quantity", "precision", "value", "source"};
  const auto& header = *nonempty[0];
  std::vector<std::string> names;
  for (const auto& h : header) names.push_back(ToLower(Trim(h)));
  if (names != kColumns) {
    return InvalidArgument(fmt::format("{}: the header must be {}", origin, Join(kColumns, ",")));
  }
  std::vector<std::string> gpu_names;
  for (const auto& g : hw::GpuPresets()) gpu_names.push_back(g.name);
  EfficiencyTable table;
  for (size_t k = 1; k < nonempty.size(); ++k) {
    const auto& r = *nonempty[k];
    const size_t line = k < line_of.size() ? line_of[k] : 0;
    auto where = [&](std::string_view column) {
      return fmt::format("{} line {}, column {}", origin, line, column);
    };
    if (r.size() != kColumns.size()) {
      return InvalidArgument(fmt::format("{} line {}: {} fields, expected {} ({})", origin, line,
                                         r.size(), kColumns.size(), Join(kColumns, ",")));
    }
    EfficiencyRow row;
    row.origin = std::string(origin);
    const std::string gpu(Trim(r[0]));
    if (gpu == "*") {
      row.gpu = gpu;  // (not = "*": GCC 12's -Wrestrict misfires on a literal assignment here)
    } else {
      auto g = hw::FindGpu(gpu);
      if (!g.ok()) {
        return InvalidArgument(fmt::format("{}: gpu '{}': not a GPU preset or * (presets: {})",
                                           where("gpu"), Excerpt(gpu), Join(gpu_names, ", ")));
      }
      row.gpu = g->name;
    }
    const std::string quantity = ToLower(Trim(r[1]));
    const QuantityInfo* info = nullptr;
    for (const auto& i : kQuantities) {
      if (i.name == quantity) info = &i;
    }
    if (info == nullptr) {
      return InvalidArgument(fmt::format(
          "{}: '{}': expected gemm, gemm_half_dim, gemm_tile_m, gemm_tile_n, attention, "
          "attention_fa2, attention_half_seq, attention_fa2_half_seq, attention_half_head_dim, "
          "attention_fa2_half_head_dim, hbm, scale_up_link, scale_out_link, collective_channels, "
          "collective_channels_scale_out or host_link",
          where("quantity"), Excerpt(quantity)));
    }
    row.quantity = info->quantity;
    row.precision = ToLower(Trim(r[2]));
    if (row.precision != "" && row.precision != "bf16" && row.precision != "fp8") {
      return InvalidArgument(fmt::format("{}: '{}': expected bf16, fp8 or empty (both)",
                                         where("precision"), Excerpt(row.precision)));
    }
    if (!row.precision.empty() && (row.quantity == EfficiencyQuantity::kScaleUpLink ||
                                   row.quantity == EfficiencyQuantity::kScaleOutLink ||
                                   row.quantity == EfficiencyQuantity::kHostLink)) {
      return InvalidArgument(fmt::format("{}: '{}': expected empty for {} (links carry any data)",
                                         where("precision"), Excerpt(row.precision), quantity));
    }
    const std::string value(Trim(r[3]));
    const std::optional<double> parsed_value = ParseDouble(value);
    row.value = parsed_value.value_or(0);
    const bool above_min =
        info->min_inclusive ? row.value >= info->min : row.value > info->min;  // false for NaN
    if (!parsed_value || !above_min || row.value > info->max) {
      return InvalidArgument(fmt::format("{}: {} '{}': expected a number in {}{:g}, {:g}]",
                                         where("value"), quantity, Excerpt(value),
                                         info->min_inclusive ? '[' : '(', info->min, info->max));
    }
    row.source = std::string(Trim(r[4]));
    if (row.source.empty()) {
      return InvalidArgument(
          fmt::format("{}: empty; every value names where it comes from", where("source")));
    }
    for (const auto& earlier : table.rows_) {
      if (SameKey(earlier, row)) {
        return InvalidArgument(fmt::format("{}: {} {} {} is given twice", where("gpu"), row.gpu,
                                           quantity,
                                           row.precision.empty() ? "(both)" : row.precision));
      }
    }
    table.rows_.push_back(std::move(row));
  }
  return table;
}

const EfficiencyTable& EfficiencyTable::Builtin() {
  static const EfficiencyTable* const kTable = [] {
    auto t = Parse(BundledEfficiencyCsv(), "built-in data/hw/efficiency.csv");
    // The file is part of the source tree and tested (efficiency_test.cc): a parse failure is a
    // build defect, not a user error.
    if (!t.ok()) std::abort();
    return new EfficiencyTable(*std::move(t));
  }();
  return *kTable;
}

void EfficiencyTable::Overlay(const EfficiencyTable& user) {
  for (const auto& row : user.rows_) {
    bool replaced = false;
    for (auto& mine : rows_) {
      if (SameKey(mine, row)) {
        mine = row;
        replaced = true;
      }
    }
    if (!replaced) rows_.push_back(row);
  }
}

DeviceEfficiency EfficiencyTable::For(const hw::Gpu& gpu, Precision precision) const {
  const std::string p = precision == Precision::kFp8 ? "fp8" : "bf16";
  auto find = [&](EfficiencyQuantity q, std::string* origin) {
    // Specificity: 3 = this GPU and precision, 2 = this GPU, 1 = every GPU and this precision,
    // 0 = every GPU.
    int best = -1;
    double value = 0;
    for (const auto& r : rows_) {
      if (r.quantity != q) continue;
      const bool gpu_match = r.gpu == gpu.name, any_gpu = r.gpu == "*";
      const bool prec_match = r.precision == p, any_prec = r.precision.empty();
      if (!(gpu_match || any_gpu) || !(prec_match || any_prec)) continue;
      const int rank = (gpu_match ? 2 : 0) + (prec_match ? 1 : 0);
      if (rank > best) {
        best = rank;
        value = r.value;
        if (origin != nullptr) *origin = r.origin;
      }
    }
    return best < 0 ? 0.0 : value;
  };
  DeviceEfficiency e;
  e.gemm = find(EfficiencyQuantity::kGemm, &e.origin);
  e.gemm_half_dim = find(EfficiencyQuantity::kGemmHalfDim, nullptr);
  e.gemm_tile_m = find(EfficiencyQuantity::kGemmTileM, nullptr);
  e.gemm_tile_n = find(EfficiencyQuantity::kGemmTileN, nullptr);
  e.attention = find(EfficiencyQuantity::kAttention, nullptr);
  e.attention_fa2 = find(EfficiencyQuantity::kAttentionFa2, nullptr);
  e.attention_half_seq = find(EfficiencyQuantity::kAttentionHalfSeq, nullptr);
  e.attention_fa2_half_seq = find(EfficiencyQuantity::kAttentionFa2HalfSeq, nullptr);
  e.attention_half_head_dim = find(EfficiencyQuantity::kAttentionHalfHeadDim, nullptr);
  e.attention_fa2_half_head_dim = find(EfficiencyQuantity::kAttentionFa2HalfHeadDim, nullptr);
  e.hbm = find(EfficiencyQuantity::kHbm, nullptr);
  e.scale_up_link = find(EfficiencyQuantity::kScaleUpLink, &e.scale_up_link_origin);
  e.scale_out_link = find(EfficiencyQuantity::kScaleOutLink, &e.scale_out_link_origin);
  e.collective_channels = find(EfficiencyQuantity::kCollectiveChannels, nullptr);
  e.collective_channels_scale_out = find(EfficiencyQuantity::kCollectiveChannelsScaleOut, nullptr);
  e.host_link = find(EfficiencyQuantity::kHostLink, nullptr);
  return e;
}

double AttentionSeqScale(double keys, double half_seq) {
  // `attention` and `attention_fa2` are stated over 8,192 keys; measured at 512-16k.
  return RampScale(keys, half_seq, 8192, 512, 16384);
}

double AttentionHeadDimScale(double head_dim, double half) {
  // `attention` and `attention_fa2` are stated at head dimension 128; measured at 64 and 128.
  return RampScale(head_dim, half, 128, 64, 128);
}

void ApplyLinkEfficiency(const EfficiencyTable& table, const hw::Gpu& gpu, cluster::Cluster* c) {
  const DeviceEfficiency e = table.For(gpu, Precision::kBf16);  // links have no precision
  if (e.scale_up_link > 0) c->node.scale_up_efficiency = e.scale_up_link;
  if (e.scale_out_link > 0) c->node.nic_efficiency = e.scale_out_link;
}

}  // namespace infralens::plan
