// The grammar is the one PipelineParallelLayerLayout accepts (megatron/core/transformer/
// pipeline_parallel_layer_layout.py): repetition by '*', grouping by parentheses, '|' between
// stages. Parsed here by a small recursive expander with a size bound, never by eval.
#include "plan/layer_layout.h"

#include <fmt/format.h>

#include <optional>

#include "base/strings.h"

namespace infralens::plan {

namespace {

class Expander {
 public:
  explicit Expander(std::string_view s) : s_(s) {}

  // The expanded string, or an error naming what is wrong.
  StatusOr<std::string> Run() {
    std::string out;
    RETURN_IF_ERROR(Sequence(out));
    if (pos_ != s_.size()) {
      return InvalidArgument(
          fmt::format("unexpected '{}' at character {}", Excerpt(s_.substr(pos_, 1)), pos_ + 1));
    }
    return out;
  }

 private:
  // sequence := item* ; item := ('(' sequence ')' | symbol) ('*' count)?
  Status Sequence(std::string& out) {
    if (++depth_ > 32) return InvalidArgument("parentheses nested more than 32 deep");
    while (pos_ < s_.size() && s_[pos_] != ')') {
      const char c = s_[pos_];
      if (c == ',' || c == ' ') {
        ++pos_;
        continue;
      }
      std::string item;
      if (c == '(') {
        ++pos_;
        RETURN_IF_ERROR(Sequence(item));
        if (pos_ >= s_.size() || s_[pos_] != ')') return InvalidArgument("unbalanced '('");
        ++pos_;
      } else if (c == 'E' || c == 'L' || c == 't' || c == 'm' || c == '|') {
        item = c;
        ++pos_;
      } else {
        return InvalidArgument(
            fmt::format("'{}' at character {}: expected E, L, t, m, |, (, ), *n or a comma",
                        Excerpt(s_.substr(pos_, 1)), pos_ + 1));
      }
      int64_t times = 1;
      if (pos_ < s_.size() && s_[pos_] == '*') {
        ++pos_;
        const size_t start = pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && pos_ - start < 7) ++pos_;
        const auto n = ParseInt(s_.substr(start, pos_ - start));
        if (!n) return InvalidArgument(fmt::format("'*' at character {} without a count", start));
        times = *n;
      }
      if (item.empty()) continue;  // "()*n" adds nothing, however large n is
      if (static_cast<size_t>(times) > (kMaxExpandedLayout - out.size()) / item.size()) {
        return InvalidArgument(fmt::format("expands past {} characters", kMaxExpandedLayout));
      }
      for (int64_t i = 0; i < times; ++i) out += item;
    }
    --depth_;
    return Status::Ok();
  }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

StatusOr<std::string> Expand(std::string_view layout) {
  if (layout.size() > kMaxLayoutChars) {
    return InvalidArgument(
        fmt::format("layout '{}': longer than {} characters", Excerpt(layout), kMaxLayoutChars));
  }
  auto e = Expander(layout).Run();
  if (!e.ok()) {
    return InvalidArgument(fmt::format("layout '{}': {}", Excerpt(layout), e.status().message()));
  }
  return e;
}

}  // namespace

StatusOr<int64_t> LayerLayoutStages(std::string_view layout) {
  ASSIGN_OR_RETURN(const std::string e, Expand(layout));
  int64_t stages = 1;
  for (char c : e) stages += c == '|' ? 1 : 0;
  return stages;
}

StatusOr<std::vector<int64_t>> ParseLayerLayout(std::string_view layout, int64_t num_layers,
                                                int64_t stages) {
  ASSIGN_OR_RETURN(const std::string e, Expand(layout));
  std::vector<int64_t> counts(1, 0);
  int64_t embeddings = 0, losses = 0;
  for (char c : e) {
    switch (c) {
      case '|':
        counts.push_back(0);
        break;
      case 't':
        ++counts.back();
        break;
      case 'E':
        ++embeddings;
        if (counts.size() != 1) {
          return InvalidArgument(fmt::format(
              "layout '{}': the embedding (E) must be in the first stage", Excerpt(layout)));
        }
        break;
      case 'L':
        ++losses;
        break;
      case 'm':
        return InvalidArgument(fmt::format(
            "layout '{}': MTP layers (m) are not modelled; give the transformer layers only",
            Excerpt(layout)));
      default:
        break;
    }
  }
  const auto where = Excerpt(layout);
  if (embeddings != 1 || losses != 1) {
    return InvalidArgument(fmt::format(
        "layout '{}': {} E and {} L; a layout names the embedding and the loss once each", where,
        embeddings, losses));
  }
  // The loss must be in the last stage: after the last '|'.
  if (e.find('L') < e.rfind('|') && e.rfind('|') != std::string::npos) {
    return InvalidArgument(
        fmt::format("layout '{}': the loss (L) must be in the last stage", where));
  }
  if (static_cast<int64_t>(counts.size()) != stages) {
    return InvalidArgument(
        fmt::format("layout '{}' has {} stages; pp x vpp = {} (stages are separated by '|')", where,
                    counts.size(), stages));
  }
  int64_t total = 0;
  for (int64_t n : counts) total += n;
  if (total != num_layers) {
    return InvalidArgument(fmt::format("layout '{}' places {} layers (t); the model has {}", where,
                                       total, num_layers));
  }
  return counts;
}

std::string LayerLayoutOfRanks(const std::vector<int64_t>& per_rank, int vpp) {
  const size_t pp = per_rank.size();
  const int64_t v = std::max(1, vpp);
  std::string out;
  for (int64_t c = 0; c < v; ++c) {
    for (size_t r = 0; r < pp; ++r) {
      const int64_t n = per_rank[r];
      // Chunk c of v holds floor(n / v) layers, one more for the last n % v chunks.
      const int64_t layers = n / v + (c >= v - n % v ? 1 : 0);
      if (!out.empty()) out += '|';
      if (c == 0 && r == 0) out += 'E';
      out.append(static_cast<size_t>(layers), 't');
      if (c == v - 1 && r == pp - 1) out += 'L';
    }
  }
  return out;
}

std::string BalancedLayerLayout(int64_t num_layers, int64_t stages) {
  // Units: E, the layers, L. Stage i holds base or base + 1 units, the lighter stages first
  // (the first rank also holds the embedding's activations through the warm-up).
  const int64_t units = num_layers + 2;
  const int64_t base = units / stages, heavy = units % stages;
  std::vector<std::string> parts;
  for (int64_t i = 0; i < stages; ++i) {
    int64_t n = base + (i >= stages - heavy ? 1 : 0);
    std::string s;
    if (i == 0) {
      s += 'E';
      --n;
    }
    const bool last = i == stages - 1;
    if (last) --n;
    s += std::string(static_cast<size_t>(std::max<int64_t>(0, n)), 't');
    if (last) s += 'L';
    parts.push_back(std::move(s));
  }
  // Run-length encode equal middle stages: "(tttt|)*14".
  std::string out;
  for (size_t i = 0; i < parts.size();) {
    size_t j = i;
    while (j < parts.size() && parts[j] == parts[i]) ++j;
    const size_t run = j - i;
    const bool last_run = j == parts.size();
    if (run >= 3 && !last_run) {
      out += fmt::format("({}|)*{}", parts[i], run);
    } else {
      for (size_t k = i; k < j; ++k) out += parts[k] + (k + 1 < parts.size() ? "|" : "");
    }
    i = j;
  }
  return out;
}

}  // namespace infralens::plan
