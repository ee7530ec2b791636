#include "io/model_source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

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

// A file named that cannot be used is a failure of the file (exit 1), whatever the reason; a
// name that is no preset and no file is the usage error (exit 2). A FIFO is refused at once: a
// read would wait for a writer forever (issue 26).
TEST(ModelSourceTest, FilesThatCannotBeUsedAreFailures) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "infralens_model_source_fifo_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  auto fifo = ResolveModel((dir / "fifo.json").string());
  EXPECT_EQ(fifo.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fifo.status().message().find("is a FIFO"), std::string::npos)
      << fifo.status().message();
  std::ofstream(dir / "bad.json") << R"({"hidden_size": 64})";
  auto bad = ResolveModel((dir / "bad.json").string());
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bad.status().message().find("num_hidden_layers"), std::string::npos)
      << bad.status().message();
  std::filesystem::remove_all(dir);
}

TEST(ModelSourceTest, PresetsFirst) {
  auto m = ResolveModel("llama3-8b");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->num_layers, 32);  // Llama 3 8B config.json: num_hidden_layers
}

}  // namespace
}  // namespace infralens::io
