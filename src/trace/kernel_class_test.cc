#include "trace/kernel_class.h"

#include <gtest/gtest.h>

#include <string>

namespace infralens::trace {
namespace {

TEST(KernelClassTest, UserPatternsRunInLinearTime) {
  auto k = KernelClassifier::Create(false, "(a+)+$", "");
  ASSERT_TRUE(k.ok()) << k.status().message();
  // A backtracking engine (std::regex) took 30 s on this 29-character name (issue 26): every way
  // of splitting the a's between the two loops is tried before the '!' fails the match. RE2
  // answers without backtracking.
  EXPECT_EQ(k->Classify(std::string(28, 'a') + "!", GpuCat::kKernel), KernelClass::kCompute);
  EXPECT_EQ(k->Classify("xaaaa", GpuCat::kKernel), KernelClass::kCommunication);
}

TEST(KernelClassTest, PatternsOutsideRe2SyntaxAreRefusedNamingTheFlag) {
  auto lookahead = KernelClassifier::Create(false, "nccl(?=Kernel)", "");
  ASSERT_FALSE(lookahead.ok());
  EXPECT_NE(lookahead.status().message().find("--comm-kernels 'nccl(?=Kernel)'"),
            std::string::npos);
  auto backref = KernelClassifier::Create(false, "", "(a)\\1");
  ASSERT_FALSE(backref.ok());
  EXPECT_NE(backref.status().message().find("--memory-kernels"), std::string::npos);
}

}  // namespace
}  // namespace infralens::trace
