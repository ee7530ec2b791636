#include "io/model_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace infralens::io {
namespace {

TEST(ModelSourceTest, ReadsPresetsConfigFilesAndDirectories) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "infralens_model_source_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
    "max_position_embeddings": 128, "tie_word_embeddings": false})";
  auto from_file = ResolveModel((dir / "config.json").string());
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(model::CountParameters(*from_file).total, 155'968);  // the tiny preset's shape
  auto from_dir = ResolveModel(dir.string());
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().message();
  EXPECT_EQ(model::CountParameters(*from_dir).total, 155'968);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ResolveModel("/nonexistent/config.json").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveModel("no-such-model").status().code(), StatusCode::kInvalidArgument);
}

TEST(ModelSourceTest, PresetsFirst) {
  auto m = ResolveModel("llama3-8b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->num_layers, 32);  // Llama 3 8B config.json: num_hidden_layers
}

}  // namespace
}  // namespace infralens::io
