#include "plan/framework_recipe.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "base/csv.h"
#include "base/strings.h"
#include "hw/gpu.h"
#include "model/presets.h"
#include "plan/cpu_offload.h"
#include "plan/parallel_config.h"

namespace infralens::plan {

namespace {

constexpr const char* kRecipeColumns[] = {"framework", "model", "gpu",   "precision",
                                          "key",       "value", "source"};

// The value of `key` set over `b`; InvalidArgument naming the allowed values otherwise.
Status SetRecipeValue(std::string_view key, std::string_view value, FrameworkBehaviour* b) {
  if (key == "ep_dispatcher") {
    auto h = EpDispatcherIsHierarchical(value);
    if (!h.ok()) return h.status();
    b->ep_hierarchical_dispatch = *h;
    return Status::Ok();
  }
  if (key == "ep_overlap") {
    if (value != "yes" && value != "no")
      return InvalidArgument(fmt::format("'{}': expected yes or no", Excerpt(value)));
    b->ep_overlap = value == "yes";
    return Status::Ok();
  }
  if (key == "tp_overlap_rs_sms" || key == "tp_overlap_bulk_sms") {
    auto v = ParseSmCount(value);
    if (!v) {
      return InvalidArgument(
          fmt::format("'{}': expected an SM count from 0 to {}", Excerpt(value), kMaxTpOverlapSms));
    }
    (key == "tp_overlap_rs_sms" ? b->tp_overlap_rs_sms : b->tp_overlap_bulk_sms) = *v;
    return Status::Ok();
  }
  if (key == "cpu_offload_layers") {
    ASSIGN_OR_RETURN(b->cpu_offload_layers, ParseCpuOffloadLayers(value));
    return Status::Ok();
  }
  if (key == "recompute_modules") {
    ASSIGN_OR_RETURN(b->recompute_modules, model::ParseRecomputeModules(value));
    return Status::Ok();
  }
  return InvalidArgument(
      fmt::format("unknown key '{}': expected ep_dispatcher, ep_overlap, tp_overlap_rs_sms, "
                  "tp_overlap_bulk_sms, cpu_offload_layers or recompute_modules",
                  Excerpt(key)));
}

}  // namespace

StatusOr<std::vector<FrameworkRecipe>> ParseFrameworkRecipes(std::string_view csv,
                                                             std::string_view origin) {
  ASSIGN_OR_RETURN(auto rows, ParseCsv(BlankCommentLines(csv), 10'000));
  std::vector<FrameworkRecipe> out;
  std::set<std::tuple<Framework, std::string, std::string, Precision, std::string>> seen;
  bool header = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    if (row.size() == 1 && Trim(row[0]).empty()) continue;  // a blank or comment line
    const int line = static_cast<int>(i + 1);
    auto bad = [&](std::string_view what) {
      return InvalidArgument(fmt::format("{} line {}: {}", origin, line, what));
    };
    if (header) {
      bool ok = row.size() == std::size(kRecipeColumns);
      for (size_t c = 0; ok && c < row.size(); ++c) ok = Trim(row[c]) == kRecipeColumns[c];
      if (!ok) return bad("the header must be framework,model,gpu,precision,key,value,source");
      header = false;
      continue;
    }
    if (row.size() != std::size(kRecipeColumns)) {
      return bad(fmt::format("{} fields, expected framework,model,gpu,precision,key,value,source",
                             row.size()));
    }
    FrameworkRecipe r;
    auto f = ParseFramework(Trim(row[0]));
    if (!f.ok()) return bad(fmt::format("framework {}", f.status().message()));
    r.framework = *f;
    // The model and GPU must be presets, named as the presets name themselves: a recipe keyed by
    // a spelling nothing resolves to would never apply.
    auto preset_name = [&](const char* column, std::string_view cell,
                           const auto& found) -> StatusOr<std::string> {
      if (!found.ok()) return bad(fmt::format("{} {}", column, found.status().message()));
      if (found->name != cell) {
        return bad(fmt::format("{} '{}': write the preset's own name, '{}'", column, Excerpt(cell),
                               found->name));
      }
      return found->name;
    };
    ASSIGN_OR_RETURN(r.model, preset_name("model", Trim(row[1]), model::FindPreset(Trim(row[1]))));
    ASSIGN_OR_RETURN(r.gpu, preset_name("gpu", Trim(row[2]), hw::FindGpu(Trim(row[2]))));
    auto p = ParsePrecision(ToLower(Trim(row[3])));
    if (!p.ok()) return bad(fmt::format("precision '{}': expected bf16 or fp8", Excerpt(row[3])));
    r.precision = *p;
    r.key = std::string(Trim(row[4]));
    r.value = ToLower(Trim(row[5]));
    FrameworkBehaviour probe;
    if (Status st = SetRecipeValue(r.key, r.value, &probe); !st.ok()) {
      return bad(fmt::format("{} {}", Excerpt(r.key), st.message()));
    }
    r.source = std::string(Trim(row[6]));
    if (r.source.empty()) return bad(fmt::format("{} has no source", r.key));
    if (!seen.emplace(r.framework, r.model, r.gpu, r.precision, r.key).second) {
      return bad(fmt::format("{} for {} {} {} {} given twice", r.key, FrameworkName(r.framework),
                             r.model, r.gpu, Trim(row[3])));
    }
    out.push_back(std::move(r));
  }
  if (header) return InvalidArgument(fmt::format("{}: no header row", origin));
  return out;
}

const std::vector<FrameworkRecipe>& BuiltinFrameworkRecipes() {
  static const auto* const kRecipes = [] {
    auto r =
        ParseFrameworkRecipes(BundledFrameworkRecipes(), "data/frameworks/recipes.csv (built in)");
    // The built-in file is tested (framework_recipe_test.cc); a broken one applies nothing.
    return new std::vector<FrameworkRecipe>(r.ok() ? std::move(*r)
                                                   : std::vector<FrameworkRecipe>());
  }();
  return *kRecipes;
}

std::vector<const FrameworkRecipe*> ApplyFrameworkRecipes(
    const std::vector<FrameworkRecipe>& recipes, Framework f, std::string_view model,
    std::string_view gpu, Precision precision, FrameworkBehaviour* b) {
  std::vector<const FrameworkRecipe*> applied;
  for (const FrameworkRecipe& r : recipes) {
    if (r.framework != f || r.model != model || r.gpu != gpu || r.precision != precision) continue;
    // Parsed values: SetRecipeValue accepted this one already.
    if (SetRecipeValue(r.key, r.value, b).ok()) applied.push_back(&r);
  }
  return applied;
}

std::vector<const FrameworkRecipe*> ApplyFrameworkRecipes(Framework f, std::string_view model,
                                                          std::string_view gpu, Precision precision,
                                                          FrameworkBehaviour* b) {
  return ApplyFrameworkRecipes(BuiltinFrameworkRecipes(), f, model, gpu, precision, b);
}

namespace {

// The dimensions that make two descriptions the same network (RecipeModelFor).
bool SameNetworkShape(const model::Model& a, const model::Model& b) {
  const auto head_dim = [](const model::Model& m) {
    return m.head_dim > 0 ? m.head_dim : m.hidden / std::max<int64_t>(1, m.num_heads);
  };
  const auto kv_heads = [](const model::Model& m) {
    return m.num_kv_heads > 0 ? m.num_kv_heads : m.num_heads;
  };
  return a.num_layers == b.num_layers && a.hidden == b.hidden && a.ffn_hidden == b.ffn_hidden &&
         a.num_heads == b.num_heads && kv_heads(a) == kv_heads(b) && head_dim(a) == head_dim(b) &&
         a.vocab == b.vocab && a.gated_mlp == b.gated_mlp && a.num_experts == b.num_experts &&
         a.top_k == b.top_k && a.expert_ffn_hidden == b.expert_ffn_hidden;
}

}  // namespace

std::string RecipeModelFor(const model::Model& m) {
  if (auto p = model::FindPreset(m.name); p.ok()) return p->name;
  for (const FrameworkRecipe& r : BuiltinFrameworkRecipes()) {
    auto p = model::FindPreset(r.model);
    if (p.ok() && SameNetworkShape(*p, m)) return p->name;
  }
  return "";
}

std::string RecipeSettings(const std::vector<const FrameworkRecipe*>& rows) {
  std::string out;
  for (const FrameworkRecipe* r : rows) {
    if (!out.empty()) out += ", ";
    out += r->key + " " + r->value;
  }
  return out;
}

std::string RecipeSources(const std::vector<const FrameworkRecipe*>& rows) {
  std::string out;
  for (const FrameworkRecipe* r : rows) {
    if (!out.empty()) out += "; ";
    out += r->source;
  }
  return out;
}

void DropRecipeKey(std::string_view key, std::vector<const FrameworkRecipe*>* rows) {
  std::erase_if(*rows, [&](const FrameworkRecipe* r) { return r->key == key; });
}

}  // namespace infralens::plan
