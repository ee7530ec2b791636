// Preset lookup and the model resolver.
#include "model/presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "base/strings.h"

namespace infralens::model {
namespace {

TEST(PresetsTest, LookupIgnoresCaseAndPunctuation) {
  const std::pair<const char*, const char*> cases[] = {
      {"llama2-7b", "llama2-7b"},       {"Llama-2-7B", "llama2-7b"},
      {"LLAMA2_7B", "llama2-7b"},       {"llama 2 7b", "llama2-7b"},
      {"Llama-2-7b-hf", "llama2-7b"},   {"GPT 18.4B", "gpt-18.4b"},  // calibration.csv's spelling
      {"GPT 1008.0B", "gpt-1t"},        {"GPT-3", "gpt3-175b"},
      {"Llama-3.1-405B", "llama3-405b"}};
  for (const auto& [spelling, name] : cases) {
    auto m = FindPreset(spelling);
    ASSERT_TRUE(m.ok()) << spelling << ": " << m.status().message();
    EXPECT_EQ(m->name, name) << spelling;
  }
}

TEST(PresetsTest, UnknownPresetSuggests) {
  auto m = FindPreset("llama2-7");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("unknown model 'llama2-7'"), std::string::npos);
  EXPECT_NE(m.status().message().find("did you mean 'llama2-7b'?"), std::string::npos)
      << m.status().message();
  EXPECT_EQ(m.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(FindPreset("").status().code(), StatusCode::kInvalidArgument);
}

TEST(PresetsTest, NamesAndAliasesAreUnique) {
  std::vector<std::string> keys;
  for (const auto& p : ModelPresets()) {
    keys.push_back(AlnumKey(p.model.name));
    for (const auto& a : p.aliases) keys.push_back(AlnumKey(a));
  }
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  EXPECT_EQ(dup, keys.end()) << "duplicate key " << *dup;
}

// The facts an export needs to train the same model, from the models' own config.json files:
// rope_theta 500000 (Llama 3), 1e6 (Mixtral), 10000 (Llama 2, DeepSeek-V3); no dropout in the
// Llama/Mixtral/DeepSeek configs; GPT-3 and Megatron's GPT train with dropout 0.1.
TEST(PresetsTest, RotaryBaseAndDropoutFromTheConfigs) {
  EXPECT_EQ(FindPreset("llama3-8b")->rope_theta, 500000);
  EXPECT_EQ(FindPreset("llama3-405b")->rope_theta, 500000);
  EXPECT_EQ(FindPreset("llama2-7b")->rope_theta, 10000);
  EXPECT_EQ(FindPreset("mixtral-8x7b")->rope_theta, 1e6);
  EXPECT_EQ(FindPreset("deepseek-v3")->rope_theta, 10000);
  EXPECT_EQ(FindPreset("gpt3-175b")->rope_theta, 0);  // learned positions
  for (const char* name : {"llama3-70b", "mixtral-8x7b", "deepseek-v3"}) {
    EXPECT_EQ(FindPreset(name)->attention_dropout, 0) << name;
    EXPECT_EQ(FindPreset(name)->hidden_dropout, 0) << name;
  }
  EXPECT_EQ(FindPreset("gpt-18.4b")->hidden_dropout, 0.1);
  EXPECT_EQ(FindPreset("gpt-18.4b")->attention_dropout, 0.1);
  for (const auto& p : ModelPresets()) EXPECT_TRUE(p.model.causal) << p.model.name;
}

TEST(PresetsTest, ValidateRefusesDropoutOutsideAProbability) {
  Model m = *FindPreset("tiny");
  m.hidden_dropout = 1.0;
  EXPECT_NE(Validate(m).message().find("hidden_dropout 1"), std::string::npos);
  m.hidden_dropout = std::nan("");
  EXPECT_FALSE(Validate(m).ok());
  m.hidden_dropout = 0;
  m.rope_theta = -1;
  EXPECT_NE(Validate(m).message().find("rope_theta -1"), std::string::npos);
}

}  // namespace
}  // namespace infralens::model
