// A framework's recipes as data: what it runs for one model on one GPU at one precision, where
// that differs by model rather than by framework (NeMo's performance recipes name the MoE token
// dispatcher and the all-to-all overlap per model and GPU). data/frameworks/recipes.csv, built in,
// every row with its source (repository, commit, file, config name).
//
// Precedence, lowest first: the framework's defaults (plan/framework.h), its recipe for the model,
// GPU and precision (here), then the user's flags or the run's CSV cells.
#ifndef INFRALENS_PLAN_FRAMEWORK_RECIPE_H_
#define INFRALENS_PLAN_FRAMEWORK_RECIPE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "plan/framework.h"
#include "plan/memory.h"

namespace infralens::plan {

// One row: `framework` running the preset `model` on the GPU preset `gpu` at `precision` sets
// `key` (ep_dispatcher: alltoall | deepep | hybridep; ep_overlap: yes | no) to `value`.
struct FrameworkRecipe {
  Framework framework = Framework::kOther;
  std::string model;  // a model preset's name (model/presets.h), lower case
  std::string gpu;    // a GPU preset's name (hw/gpu.h), as hw::FindGpu names it
  Precision precision = Precision::kBf16;
  std::string key, value, source;
};

// Parses a recipes file (framework,model,gpu,precision,key,value,source; '#' comment lines):
// InvalidArgument naming the origin, line and cell for an unknown framework, model preset, GPU,
// precision or key, a bad value, an empty source, or a (framework, model, GPU, precision, key)
// given twice.
StatusOr<std::vector<FrameworkRecipe>> ParseFrameworkRecipes(std::string_view csv,
                                                             std::string_view origin);
// The built-in file (data/frameworks/recipes.csv), parsed once (tested: framework_recipe_test.cc).
const std::vector<FrameworkRecipe>& BuiltinFrameworkRecipes();
std::string_view BundledFrameworkRecipes();  // its text (cmake/embed_file.cmake)

// Applies the rows of `recipes` that match `f`, the model preset `model` (a preset's canonical
// name; any other name, a config.json path, matches nothing), the GPU preset `gpu` and
// `precision` over `b`. Returns the rows applied (pointers into `recipes`), in file order.
std::vector<const FrameworkRecipe*> ApplyFrameworkRecipes(
    const std::vector<FrameworkRecipe>& recipes, Framework f, std::string_view model,
    std::string_view gpu, Precision precision, FrameworkBehaviour* b);
// The same over the built-in recipes.
std::vector<const FrameworkRecipe*> ApplyFrameworkRecipes(Framework f, std::string_view model,
                                                          std::string_view gpu, Precision precision,
                                                          FrameworkBehaviour* b);

// The model preset name a recipe row must name to apply to `m`: its own, when `m` is a preset;
// otherwise (a validation row's columns, a config.json) the first preset named in the built-in
// recipes whose shape is m's: layers, hidden and MLP widths, query and key/value heads, head
// dimension, vocabulary, gated MLP, and the experts (count, top-k, width). A recipe is what the
// framework runs for that network, whatever file described it. "" when none.
std::string RecipeModelFor(const model::Model& m);

// Rows applied, in words: "ep_dispatcher deepep, ep_overlap yes" (RecipeSettings), and their
// sources "; "-joined (RecipeSources); "" for none.
std::string RecipeSettings(const std::vector<const FrameworkRecipe*>& rows);
std::string RecipeSources(const std::vector<const FrameworkRecipe*>& rows);
// `rows` without those that set `key` (a flag or a cell said it instead).
void DropRecipeKey(std::string_view key, std::vector<const FrameworkRecipe*>* rows);

}  // namespace infralens::plan

#endif  // INFRALENS_PLAN_FRAMEWORK_RECIPE_H_
