// Preset lookup and the model resolver.
#include "model/presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace infralens::model {
namespace {

TEST(PresetsTest, LookupIgnoresCaseAndPunctuation) {
  for (const char* name : {"llama2-7b", "Llama-2-7B", "LLAMA2_7B", "llama 2 7b", "Llama-2-7b-hf"}) {
    auto m = FindPreset(name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().message();
    EXPECT_EQ(m->name, "llama2-7b");
  }
  EXPECT_EQ(FindPreset("GPT 18.4B")->name, "gpt-18.4b");  // calibration.csv's spelling
  EXPECT_EQ(FindPreset("GPT 1008.0B")->name, "gpt-1t");
  EXPECT_EQ(FindPreset("GPT-3")->name, "gpt3-175b");
  EXPECT_EQ(FindPreset("Llama-3.1-405B")->name, "llama3-405b");
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
    keys.push_back(PresetKey(p.model.name));
    for (const auto& a : p.aliases) keys.push_back(PresetKey(a));
  }
  std::sort(keys.begin(), keys.end());
  auto dup = std::adjacent_find(keys.begin(), keys.end());
  EXPECT_EQ(dup, keys.end()) << "duplicate key " << *dup;
}

TEST(PresetsTest, ResolveReadsConfigFilesAndDirectories) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "infralens_presets_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
    "max_position_embeddings": 128, "tie_word_embeddings": false})";
  auto from_file = Resolve((dir / "config.json").string());
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(CountParameters(*from_file).total, 155'968);  // the tiny preset's shape
  auto from_dir = Resolve(dir.string());
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().message();
  EXPECT_EQ(CountParameters(*from_dir).total, 155'968);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(Resolve("/nonexistent/config.json").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Resolve("no-such-model").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace infralens::model
