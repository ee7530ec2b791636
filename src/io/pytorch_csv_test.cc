#include "io/pytorch_csv.h"

#include <gtest/gtest.h>

#include "sim/simulator.h"

namespace infralens::io {
namespace {

using schedule::Action;

// Every generated schedule survives a write/read round trip unchanged, placement included.
TEST(PytorchCsvTest, RoundTripEverySchedule) {
  for (const auto& info : schedule::AllSchedules()) {
    auto s = schedule::Generate(info.kind, {4, 0, 8});
    ASSERT_TRUE(s.ok()) << info.name;
    auto back = ReadPytorchCsv(WritePytorchCsv(*s));
    ASSERT_TRUE(back.ok()) << info.name << ": " << back.status().message();
    EXPECT_EQ(back->ranks, s->ranks) << info.name;
    EXPECT_EQ(back->pp, s->pp);
    EXPECT_EQ(back->vpp, s->vpp);
    EXPECT_EQ(back->microbatches, s->microbatches);
    EXPECT_EQ(back->stage_to_rank, s->stage_to_rank) << info.name;
    EXPECT_EQ(back->stage_chunk, s->stage_chunk) << info.name;
    EXPECT_EQ(back->placement, s->placement) << info.name;
    EXPECT_TRUE(schedule::ValidateStructure(*back).ok());
  }
}

// The file PyTorch's _dump_csv writes: empty cells for idle slots, CRLF tolerated.
TEST(PytorchCsvTest, ReadsIdleCellsAndCrlf) {
  auto s = ReadPytorchCsv("0F0,0F1,,0B0,0B1\r\n,1F0,1B0,1F1,1B1\r\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->pp, 2);
  EXPECT_EQ(s->vpp, 1);
  EXPECT_EQ(s->microbatches, 2);
  ASSERT_EQ(s->ranks[0].size(), 4u);
  EXPECT_EQ(s->ranks[0][2], Action::B(0, 0));
  EXPECT_TRUE(schedule::ValidateStructure(*s).ok());
  auto r = sim::Simulate(*s, sim::Costs{});
  ASSERT_TRUE(r.ok());
}

TEST(PytorchCsvTest, ErrorsNameTheCell) {
  auto unknown = ReadPytorchCsv("0F0,0X0\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("line 1 (rank 0), column 2"), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("0X0"), std::string::npos);

  auto comm = ReadPytorchCsv("0F0,0SEND_F0\n");
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("compute-only"), std::string::npos);

  auto two_rows = ReadPytorchCsv("0F0,0B0,1F0,1B0\n0F1,0B1,1F1,1B1\n");
  ASSERT_FALSE(two_rows.ok());
  EXPECT_NE(two_rows.status().message().find("stage 0 appears on rank 0 and rank 1"),
            std::string::npos)
      << two_rows.status().message();

  EXPECT_FALSE(ReadPytorchCsv("").ok());
  EXPECT_FALSE(ReadPytorchCsv("\n\n").ok());
  EXPECT_FALSE(ReadPytorchCsv(",,,\n").ok());
}

// A missing microbatch and a duplicated action are structural errors naming stage and microbatch.
TEST(PytorchCsvTest, ValidatorNamesMissingAndDuplicateActions) {
  auto missing = ReadPytorchCsv("0F0,0F2,0B0,0B2\n1F0,1F2,1B0,1B2\n");
  ASSERT_TRUE(missing.ok());
  auto st = schedule::ValidateStructure(*missing);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stage 0 has no forward (F) for microbatch 1"), std::string::npos)
      << st.message();

  auto dup = ReadPytorchCsv("0F0,0F0,0B0\n");
  ASSERT_TRUE(dup.ok());
  st = schedule::ValidateStructure(*dup);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("appears twice"), std::string::npos) << st.message();

  auto half = ReadPytorchCsv("0F0,0I0\n");
  ASSERT_TRUE(half.ok());
  st = schedule::ValidateStructure(*half);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no weight backward (W)"), std::string::npos) << st.message();
}

// A cycle read from a file is caught by the simulator, naming the stuck actions.
TEST(PytorchCsvTest, CycleIsReportedAsDeadlock) {
  auto s = ReadPytorchCsv("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(schedule::ValidateStructure(*s).ok());
  auto r = sim::Simulate(*s, sim::Costs{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deadlock"), std::string::npos);
}

TEST(PytorchCsvTest, UnevenStagesAreRefused) {
  auto s = ReadPytorchCsv("0F0,1F0,2F0,2B0,1B0,0B0\n3F0,3B0\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("rank 0 holds 3 stages"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace infralens::io
