#include "base/atomic_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace infralens {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Test processes run in parallel under ctest: the folder carries the test's name.
    dir_ = ::testing::TempDir() + "/infralens_atomic_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // Every name in the folder, sorted: what a failed write must not leave behind.
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST_F(AtomicFileTest, WritesANewFileAndLeavesNothingElse) {
  const std::string path = dir_ + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"a\": 1}\n").ok());
  EXPECT_EQ(Read(path), "{\"a\": 1}\n");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFileTest, ReplacesAnOldFileAndKeepsItsPermissions) {
  const std::string path = dir_ + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(5000, 'x')).ok());
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_TRUE(WriteFileAtomically(path, "short").ok());
  EXPECT_EQ(Read(path), "short");  // not "short" followed by the old file's tail
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(Names(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFileTest, TargetInAMissingFolderFailsAndCreatesNothing) {
  Status st = WriteFileAtomically(dir_ + "/no/such/folder/out.json", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("No such file or directory"), std::string::npos) << st.message();
  EXPECT_TRUE(Names().empty());
}

TEST_F(AtomicFileTest, AFolderAsTargetIsRefusedAndLeftAlone) {
  fs::create_directories(dir_ + "/sub");
  std::ofstream(dir_ + "/sub/keep") << "kept";
  Status st = WriteFileAtomically(dir_ + "/sub", "data");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is a folder"), std::string::npos) << st.message();
  EXPECT_EQ(Read(dir_ + "/sub/keep"), "kept");
  EXPECT_EQ(Names(), std::vector<std::string>{"sub"});
}

TEST_F(AtomicFileTest, AFailedRenameRemovesTheTemporary) {
  // Open while the target is a file, then put a non-empty folder in its place: rename(2) cannot
  // replace a folder, so Commit fails after the data was written.
  const std::string path = dir_ + "/out";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  AtomicFile f;
  ASSERT_TRUE(f.Open(path).ok());
  ASSERT_TRUE(f.Write("new data").ok());
  const std::string temp = f.temp_path();
  ASSERT_FALSE(temp.empty());
  EXPECT_TRUE(fs::exists(temp));
  fs::remove(path);
  fs::create_directories(path + "/inside");
  Status st = f.Commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_TRUE(fs::is_directory(path + "/inside"));
  EXPECT_EQ(Names(), std::vector<std::string>{"out"});
}

TEST_F(AtomicFileTest, AbandonedWriterLeavesTheOldFileByteIdentical) {
  const std::string path = dir_ + "/out.json";
  const std::string old(100000, 'o');
  ASSERT_TRUE(WriteFileAtomically(path, old).ok());
  {
    AtomicFile f;
    ASSERT_TRUE(f.Open(path).ok());
    ASSERT_TRUE(f.Write(std::string(300000, 'n')).ok());
    EXPECT_EQ(f.bytes_written(), 300000u);
    // No Commit: an early return on an error path.
  }
  EXPECT_EQ(Read(path), old);
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFileTest, AFileSizeLimitFailsTheWriteAndKeepsTheOldFile) {
  // The CLI ignores SIGXFSZ so that a write past `ulimit -f` fails with EFBIG; do the same here
  // and restore the signal and the limit afterwards.
  const std::string path = dir_ + "/out.json";
  ASSERT_TRUE(WriteFileAtomically(path, "previous").ok());
  struct rlimit old_limit {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  Status st = WriteFileAtomically(path, std::string(10000, 'z'));
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("File too large"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("after 4096 bytes"), std::string::npos) << st.message();
  EXPECT_EQ(Read(path), "previous");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

TEST_F(AtomicFileTest, ASymbolicLinkKeepsPointingAtTheReplacedFile) {
  const std::string real = dir_ + "/real.json", link = dir_ + "/link.json";
  ASSERT_TRUE(WriteFileAtomically(real, "old").ok());
  fs::create_symlink("real.json", link);
  ASSERT_TRUE(WriteFileAtomically(link, "new").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(real), "new");
  EXPECT_EQ(Names(), (std::vector<std::string>{"link.json", "real.json"}));
}

TEST_F(AtomicFileTest, ADeviceIsWrittenInPlaceNotReplaced) {
  ASSERT_TRUE(WriteFileAtomically("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(AtomicFileTest, FinishThenCommitSeveralFilesTogether) {
  std::vector<AtomicFile> files(3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(files[i].Open(dir_ + "/rank" + std::to_string(i) + ".json").ok());
    // Appended, not `"r" + std::to_string(i)`: GCC 12 warns falsely (-Wrestrict) on
    // operator+(const char*, string&&) (GCC bug 105329).
    ASSERT_TRUE(files[i].Write(std::string("r").append(std::to_string(i))).ok());
    ASSERT_TRUE(files[i].Finish().ok());
  }
  // Complete but not yet in place: only temporaries (dot files) exist.
  for (const std::string& name : Names()) EXPECT_EQ(name[0], '.') << name;
  for (auto& f : files) ASSERT_TRUE(f.Commit().ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"rank0.json", "rank1.json", "rank2.json"}));
  EXPECT_EQ(Read(dir_ + "/rank2.json"), "r2");
}

TEST_F(AtomicFileTest, ASignalMidWriteRemovesTheTemporary) {
  const std::string path = dir_ + "/out.json";
  // In a child (gtest forks for death tests): a write under way when SIGTERM arrives.
  EXPECT_EXIT(
      {
        RemoveTemporariesOnSignals();
        AtomicFile f;
        if (!f.Open(path).ok() || !f.Write("partial").ok()) std::exit(3);
        std::raise(SIGTERM);
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_EQ(Names(), std::vector<std::string>{});
}

TEST_F(AtomicFileTest, OnlyTheTemporariesOfDeadProcessesAreAbandoned) {
  // No process has pid 2^22 + 1 (Linux's pid_max is at most 2^22).
  EXPECT_TRUE(IsAbandonedTemporary(".rank0.json.4194305-0-0000abcd.tmp"));
  const std::string mine = fmt::format(".rank0.json.{}-3-deadbeef.tmp", ::getpid());
  EXPECT_FALSE(IsAbandonedTemporary(mine));                                 // this process runs
  EXPECT_FALSE(IsAbandonedTemporary("rank0.json.4194305-0-0000abcd.tmp"));  // not hidden
  EXPECT_FALSE(IsAbandonedTemporary(".rank0.json.4194305-0-abcd.tmp"));     // 4 hex digits
  EXPECT_FALSE(IsAbandonedTemporary(".rank0.json.x-0-0000abcd.tmp"));
  EXPECT_FALSE(IsAbandonedTemporary(".rank0.json"));
}

}  // namespace
}  // namespace infralens
