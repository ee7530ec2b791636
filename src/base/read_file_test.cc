#include "base/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace infralens {
namespace {

namespace fs = std::filesystem;

TEST(ReadFileTest, OnlyRegularFilesAreRead) {
  const std::string dir = ::testing::TempDir() + "/infralens_read_file_regular";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/a.txt") << "abc";
  auto text = ReadFileLimited(dir + "/a.txt", 16);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "abc");
  // A FIFO with no writer: opening it for reading would wait for one forever (issue 26).
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  auto fifo = ReadFileLimited(dir + "/fifo", 16);
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(fifo.status().message().find("is a FIFO, not a regular file"), std::string::npos);
  auto folder = ReadFileLimited(dir, 16);
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("is a folder"), std::string::npos);
  auto device = ReadFileLimited("/dev/zero", 16);  // would never end
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("is a device"), std::string::npos);
  EXPECT_EQ(ReadFileLimited(dir + "/missing", 16).status().code(), StatusCode::kNotFound);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace infralens
