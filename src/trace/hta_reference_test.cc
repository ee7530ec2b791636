// --hta-compat against Holistic Trace Analysis' own output on the shared real traces: each folder's
// HTA_REFERENCE.txt holds what HTA v0.6.1 printed (temporal breakdown, comm/comp overlap, idle time
// per stream, kernel types, with and without the last ProfilerStep). The expected values are parsed
// from those files, never copied from InfraLens' output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/strings.h"
#include "trace/analysis.h"
#include "trace/loader.h"
#include "trace/testing.h"

namespace infralens::trace {
namespace {

struct Temporal {
  double idle, compute, non_compute, kernel_time, idle_pct, compute_pct, non_compute_pct;
};
struct IdleRow {
  double idle_time;
};
struct Reference {
  std::map<int64_t, Temporal> temporal[2];  // [include_last]
  std::map<int64_t, double> overlap[2];
  std::map<std::tuple<int64_t, int64_t, std::string>, IdleRow> idle;  // include_last=False only
  std::map<std::string, double> kernel_types;
};

std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

Reference ParseReference(const std::string& path) {
  Reference ref;
  std::ifstream f(path);
  std::string line, section;
  int last = 0;
  bool header = false;
  while (std::getline(f, line)) {
    if (line.rfind("#####", 0) == 0) {
      last = line.find("include_last_profiler_step=True") != std::string::npos ? 1 : 0;
      section.clear();
      continue;
    }
    if (line.rfind("---", 0) == 0) {
      section = line;
      header = true;
      continue;
    }
    if (line.rfind("analysis_wall", 0) == 0 || line.rfind("NOTE", 0) == 0) {
      section.clear();
      continue;
    }
    if (section.empty()) continue;
    if (header) {  // the column names
      header = false;
      continue;
    }
    auto t = Tokens(line);
    if (t.empty()) continue;
    if (section.find("get_temporal_breakdown") != std::string::npos && t.size() == 8) {
      ref.temporal[last][*ParseInt(t[0])] = {
          *ParseDouble(t[1]), *ParseDouble(t[2]), *ParseDouble(t[3]), *ParseDouble(t[4]),
          *ParseDouble(t[5]), *ParseDouble(t[6]), *ParseDouble(t[7])};
    } else if (section.find("get_comm_comp_overlap") != std::string::npos && t.size() == 2) {
      ref.overlap[last][*ParseInt(t[0])] = *ParseDouble(t[1]);
    } else if (section.find("get_idle_time_breakdown") != std::string::npos && t.size() == 5) {
      ref.idle[{*ParseInt(t[0]), *ParseInt(t[1]), t[2]}] = {*ParseDouble(t[3])};
    } else if (section.find("get_gpu_kernel_breakdown") != std::string::npos && t.size() >= 3) {
      std::vector<std::string> words(t.begin(), t.end() - 2);
      ref.kernel_types[Join(words, " ")] = *ParseDouble(t[t.size() - 2]);
    }
  }
  return ref;
}

// HTA's kernel-type label for our bitmask (1 computation, 2 communication, 4 memory).
std::string HtaKernelType(int mask) {
  std::vector<std::string> parts;
  if (mask & 1) parts.emplace_back("COMPUTATION");
  if (mask & 2) parts.emplace_back("COMMUNICATION");
  if (mask & 4) parts.emplace_back("MEMORY");
  return Join(parts, " overlapping ");
}

class HtaReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HtaReferenceTest, MatchesHta) {
  const std::string root = testing::SharedTracesDir();
  if (root.empty())
    GTEST_SKIP() << "shared traces not found beside the repository (../shared/data/traces)";
  const std::string dir = root + "/" + GetParam();
  if (!std::filesystem::exists(dir + "/HTA_REFERENCE.txt"))
    GTEST_SKIP() << dir << " has no HTA_REFERENCE.txt";
  const Reference ref = ParseReference(dir + "/HTA_REFERENCE.txt");
  ASSERT_FALSE(ref.temporal[0].empty()) << "could not parse " << dir << "/HTA_REFERENCE.txt";
  auto files = ExpandTracePaths({dir});
  ASSERT_TRUE(files.ok()) << files.status().message();
  LoadedTraces loaded = LoadTraces(*files);
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors[0].status.message();
  double max_pp = 0;
  for (int last = 0; last < 2; ++last) {
    if (ref.temporal[last].empty()) continue;
    AnalysisOptions o;
    o.hta_compat = true;
    o.include_last_step = last == 1;
    auto a = Analyze(loaded.traces, o);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_EQ(a->ranks.size(), ref.temporal[last].size());
    for (const RankResult& r : a->ranks) {
      SCOPED_TRACE(::testing::Message()
                   << GetParam() << " rank " << r.rank << " include_last_step " << last);
      const Temporal& want = ref.temporal[last].at(r.rank);
      // HTA works in whole microseconds here, so the times agree exactly.
      EXPECT_NEAR(r.idle_us, want.idle, 0.5);
      EXPECT_NEAR(r.compute_us, want.compute, 0.5);
      EXPECT_NEAR(r.non_compute_us, want.non_compute, 0.5);
      EXPECT_NEAR(r.kernel_time_us, want.kernel_time, 0.5);
      // The brief's bar: within 0.1 percentage point (HTA prints two decimals).
      EXPECT_NEAR(r.idle_pct, want.idle_pct, 0.1);
      EXPECT_NEAR(r.compute_pct, want.compute_pct, 0.1);
      EXPECT_NEAR(r.non_compute_pct, want.non_compute_pct, 0.1);
      max_pp = std::max({max_pp, std::abs(r.idle_pct - want.idle_pct),
                         std::abs(r.compute_pct - want.compute_pct),
                         std::abs(r.non_compute_pct - want.non_compute_pct)});
      if (ref.overlap[last].count(r.rank)) {
        EXPECT_NEAR(r.overlap_pct, ref.overlap[last].at(r.rank), 0.1);
        max_pp = std::max(max_pp, std::abs(r.overlap_pct - ref.overlap[last].at(r.rank)));
      }
      if (last == 0) {
        for (const StreamIdle& s : r.streams) {
          auto check = [&](const char* cat, bool has, double us) {
            auto it = ref.idle.find({r.rank, s.stream, cat});
            EXPECT_EQ(has, it != ref.idle.end()) << "stream " << s.stream << " " << cat;
            if (has && it != ref.idle.end()) {
              EXPECT_NEAR(us, it->second.idle_time, 0.5) << "stream " << s.stream << " " << cat;
            }
          };
          check("host_wait", s.has_host_wait, s.host_wait_us);
          check("kernel_wait", s.has_kernel_wait, s.kernel_wait_us);
          check("other", s.has_other, s.other_us);
        }
      }
    }
    if (last == 0) {
      for (int mask = 1; mask < 8; ++mask) {
        auto it = ref.kernel_types.find(HtaKernelType(mask));
        const double want = it == ref.kernel_types.end() ? 0 : it->second;
        EXPECT_NEAR(a->kernel_types[mask], want, 0.5) << GetParam() << " " << HtaKernelType(mask);
      }
    }
  }
  std::cout << "[ HTA      ] " << GetParam() << ": max deviation " << max_pp
            << " percentage points\n";
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, HtaReferenceTest,
                         ::testing::Values("hta_ddp_allreduce_5step_rank1",
                                           "hta_ddp_allreduce_rank0", "hta_sampled_2rank",
                                           "param_dlrm_8rank"));

}  // namespace
}  // namespace infralens::trace
