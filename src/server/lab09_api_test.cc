// Lab 09 (/api/scenarios, /api/explain) and the rest of lab 12 (/api/worksheet,
// /api/worksheet/check, /api/export) in the web API, in-process. Each answer is checked against
// the CLI's document for the same request, and against facts derived by hand (dp = GPUs over
// tp x pp, DeepSpeed's batch identity, two bytes per BF16 weight), and every refusal for the
// parameter it names.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "golden_test_util.h"
#include "lab/scenarios.h"
#include "server/api.h"
#include "server/api_test_util.h"

namespace infralens::server {
namespace {

using ::infralens::testing::RunCliCapture;
using ::infralens::testing::SourcePath;
using nlohmann::json;
using testing::ExpectError;
using testing::Get;
using testing::Header;
using testing::MakeApi;
using testing::Ok;
using testing::PatientApi;
using testing::Post;

std::string CliText(const std::vector<std::string>& args) {
  auto run = RunCliCapture(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return run.out;
}

std::string ReadSource(const std::string& relative) {
  std::ifstream in(SourcePath(relative), std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Llama-3 70B, 64 H100s, 512 x 8192 tokens: the lab's job.
const char kJob[] = "model=llama3-70b&cluster=dgx-h100&gpus=64&global_batch=512&seq=8192";
const std::vector<std::string> kJobFlags = {"--model", "llama3-70b", "--cluster",      "dgx-h100",
                                            "--gpus",  "64",         "--global-batch", "512",
                                            "--seq",   "8192"};
const char kTp8Pp4[] = "tp=8&pp=4&distributed_optimizer=1&sp=1";
const std::vector<std::string> kTp8Pp4Flags = {"--tp", "8", "--pp", "4", "--distributed-optimizer",
                                               "--sp"};

std::vector<std::string> Args(std::vector<std::string> head,
                              const std::vector<std::vector<std::string>>& tails) {
  for (const auto& t : tails) head.insert(head.end(), t.begin(), t.end());
  return head;
}
std::string Target(const std::string& path, const std::string& query) { return path + "?" + query; }

const std::vector<std::string> kSections = {"problem", "mechanism", "communication", "tradeoff",
                                            "measurement"};

void ExpectFiveParts(const json& e) {
  ASSERT_EQ(e["sections"].size(), kSections.size()) << e.dump().substr(0, 300);
  for (size_t k = 0; k < kSections.size(); ++k) {
    EXPECT_EQ(e["sections"][k]["name"], kSections[k]);
    EXPECT_FALSE(e["sections"][k]["sentences"].empty()) << kSections[k];
  }
}

TEST(ScenariosApiTest, ListAndAnswersAreTheCliDocuments) {
  Api api = PatientApi();
  json list = Ok(Get(api, "/api/scenarios"));
  EXPECT_EQ(list, json::parse(CliText({"scenarios", "--json"})));
  ASSERT_EQ(list["scenarios"].size(), lab::Scenarios().size());
  for (const json& s : list["scenarios"]) {
    EXPECT_FALSE(s["question"].get<std::string>().empty());
    EXPECT_EQ(s["answer"].get<std::string>().rfind("error", 0), std::string::npos) << s["answer"];
  }
  // A second request is served from the cache: the same bytes.
  EXPECT_EQ(Get(api, "/api/scenarios").body, Get(api, "/api/scenarios").body);

  json dp64 = Ok(Get(api, "/api/scenarios?name=dp64-oom"));
  EXPECT_EQ(dp64, json::parse(CliText({"scenarios", "dp64-oom", "--json"})));
  ExpectFiveParts(dp64);
  // Plain data parallelism over the 64 GPUs: every GPU holds the whole model.
  EXPECT_EQ(dp64["layout"].get<std::string>().rfind("tp=1 pp=1 dp=64", 0), 0u) << dp64["layout"];
  EXPECT_FALSE(dp64["question"].get<std::string>().empty());

  HttpResponse md = Get(api, "/api/scenarios?name=tp-across-nodes&format=markdown");
  EXPECT_EQ(md.status, 200);
  EXPECT_EQ(md.content_type, "text/markdown; charset=utf-8");
  EXPECT_EQ(md.body, CliText({"scenarios", "tp-across-nodes"}));

  ExpectError(Get(api, "/api/scenarios?name=dp65-oom"), 400, "name", "one of 70b-on-64, dp64-oom");
  // Generated from `infralens scenarios [NAME]`: the positional NAME is `name`, and the format.
  for (const Endpoint& e : api.endpoints()) {
    if (e.path != "/api/scenarios") continue;
    ASSERT_EQ(e.params.size(), 2u);
    EXPECT_EQ(e.params[0].name, "name");
    EXPECT_EQ(e.params[1].name, "format");
  }
  ExpectError(Get(api, "/api/scenarios?format=html"), 400, "format", "json");
  ExpectError(Get(api, "/api/scenarios?scenario=dp64-oom"), 400, "scenario", "unknown parameter");
}

TEST(ScenariosApiTest, ExplainAGivenLayoutAndThePlannersBest) {
  Api api = PatientApi();
  json mine = Ok(Get(api, Target("/api/explain", std::string(kJob) + "&" + kTp8Pp4)));
  EXPECT_EQ(mine, json::parse(CliText(Args({"explain"}, {kJobFlags, kTp8Pp4Flags, {"--json"}}))));
  ExpectFiveParts(mine);
  // dp = 64 / (8 x 4) = 2; the distributed optimizer is ZeRO-1.
  EXPECT_EQ(mine["layout"].get<std::string>().rfind("tp=8 pp=4 dp=2 zero=1 sp", 0), 0u)
      << mine["layout"];
  EXPECT_FALSE(mine["planner_best"].get<bool>());

  json best = Ok(Get(api, Target("/api/explain", kJob)));
  EXPECT_TRUE(best["planner_best"].get<bool>());
  // The planner's best is the first layout of the search on the same job.
  json search = Ok(Get(api, Target("/api/plan", std::string(kJob) + "&top=1")));
  EXPECT_EQ(best["layout"], search["plans"][0]["layout"]);

  HttpResponse md =
      Get(api, Target("/api/explain", std::string(kJob) + "&" + kTp8Pp4 + "&format=markdown"));
  EXPECT_EQ(md.content_type, "text/markdown; charset=utf-8");
  EXPECT_EQ(md.body, CliText(Args({"explain"}, {kJobFlags, kTp8Pp4Flags})));

  ExpectError(Get(api, "/api/explain?gpus=64&global_batch=512"), 400, "model", "required");
  // tp=3 does not divide 64 GPUs.
  // tp alone restricts the search (issue 27); 3 cannot divide the GPUs, the parameter is named.
  ExpectError(Get(api, Target("/api/explain", std::string(kJob) + "&tp=3")), 400, "tp",
              "--tp 3: does not divide the cluster's 64 GPUs");
  ExpectError(Get(api, "/api/explain?model=llama3-8b&gpus=16385&global_batch=256"), 400, "gpus",
              "from 1 to 16384");
}

TEST(WorksheetApiTest, FilledForTheChosenLayout) {
  Api api = PatientApi();
  json w = Ok(Get(api, Target("/api/worksheet", std::string(kJob) + "&" + kTp8Pp4)));
  EXPECT_EQ(w, json::parse(CliText(Args({"worksheet"}, {kJobFlags, kTp8Pp4Flags, {"--json"}}))));
  // The degree column is the layout's: TP 8, PP 4, DP 64 / 32 = 2.
  std::map<std::string, std::string> degree;
  for (const json& row : w["axes"]) degree[row["axis"]] = row["degree"];
  EXPECT_EQ(degree["TP"], "8");
  EXPECT_EQ(degree["PP"], "4");
  EXPECT_EQ(degree["DP"], "2");

  HttpResponse md = Get(api, Target("/api/worksheet", std::string(kJob) + "&format=markdown"));
  EXPECT_EQ(md.status, 200) << md.body;
  EXPECT_EQ(md.content_type, "text/markdown; charset=utf-8");
  EXPECT_EQ(md.body, CliText(Args({"worksheet"}, {kJobFlags})));
  EXPECT_NE(md.body.find("The planner's best layout: "), std::string::npos);
  EXPECT_NE(md.body.find("| Axis | Degree | Placement | Reason |"), std::string::npos);

  ExpectError(Get(api, Target("/api/worksheet", std::string(kJob) + "&format=csv")), 400, "format",
              "json");
}

TEST(WorksheetApiTest, CheckAnswersPointByPoint) {
  Api api = PatientApi();
  const std::string query = std::string(kJob);
  const std::string dp64 = ReadSource("tests/data/worksheet_dp64.md");
  json c = Ok(Post(api, Target("/api/worksheet/check", query), dp64, "text/markdown"));
  EXPECT_EQ(c, json::parse(
                   CliText(Args({"worksheet", "check", SourcePath("tests/data/worksheet_dp64.md")},
                                {kJobFlags, {"--json"}}))));
  // DP=64 on 64 GPUs: the whole model on every GPU. Its BF16 weights alone are 2 bytes per
  // parameter, more than half the 80 GB of an H100.
  EXPECT_TRUE(c["evaluated"].get<bool>());
  EXPECT_FALSE(c["predicted"]["fits"].get<bool>());
  ASSERT_FALSE(c["findings"].empty());
  EXPECT_EQ(c["findings"][0]["id"], "fit");
  EXPECT_EQ(c["findings"][0]["severity"], "error");
  double weights = 0;
  for (const json& n : c["findings"][0]["numbers"]) {
    if (n["name"] == "weights_bytes") weights = n["value"];
  }
  EXPECT_GT(weights, 2 * 70e9);
  EXPECT_LT(weights, 2 * 71e9);

  HttpResponse md = Post(api, Target("/api/worksheet/check", query + "&format=markdown"),
                         ReadSource("tests/data/worksheet_good.md"), "text/markdown");
  EXPECT_EQ(md.status, 200) << md.body;
  EXPECT_EQ(md.body,
            CliText(Args({"worksheet", "check", SourcePath("tests/data/worksheet_good.md")},
                         {kJobFlags})));

  ExpectError(Post(api, Target("/api/worksheet/check", query),
                   ReadSource("tests/data/worksheet_bad_degree.md"), "text/markdown"),
              400, "body", "request body: line 4: PP degree 'a few'");
  ExpectError(Post(api, Target("/api/worksheet/check", query), "", "text/markdown"), 400, "body",
              "send the filled");
  ExpectError(
      Post(api, Target("/api/worksheet/check", query), "just prose, no table\n", "text/markdown"),
      400, "body", "request body:");
  ExpectError(Post(api, Target("/api/worksheet/check", query), std::string((1 << 20) + 1, '|'),
                   "text/markdown"),
              400, "body", "at most 1048576");
  // The worksheet gives the layout: degrees in the query are not taken.
  ExpectError(Post(api, Target("/api/worksheet/check", query + "&tp=8"), dp64, "text/markdown"),
              400, "tp", "unknown parameter");
  ExpectError(Get(api, Target("/api/worksheet/check", query)), 405, "", "");
}

TEST(ExportApiTest, TheCliExportsWithTheirFileNames) {
  Api api = PatientApi();
  const std::string mine = std::string(kJob) + "&" + kTp8Pp4;
  for (const char* format : {"megatron", "deepspeed", "torchtitan", "pytorch-csv"}) {
    SCOPED_TRACE(format);
    json e = Ok(Get(api, Target("/api/export", mine + "&format=" + format)));
    EXPECT_EQ(e["format"], format);
    EXPECT_FALSE(e["planner_best"].get<bool>());
    EXPECT_EQ(e["content"],
              CliText(Args({"plan"}, {kJobFlags, kTp8Pp4Flags, {"--export", format}})));
    HttpResponse file = Get(api, Target("/api/export", mine + "&format=" + format + "&download=1"));
    EXPECT_EQ(file.status, 200);
    EXPECT_EQ(file.body, e["content"].get<std::string>());
    EXPECT_EQ(file.content_type, e["content_type"].get<std::string>());
    EXPECT_EQ(Header(file, "Content-Disposition"),
              "attachment; filename=\"" + e["file_name"].get<std::string>() + "\"");
  }
  // DeepSpeed's identity: train_batch_size = micro-batch x accumulation steps x data-parallel size,
  // 512 = 1 x 256 x 2 for tp=8 pp=4 on 64 GPUs.
  json ds = Ok(Get(api, Target("/api/export", mine + "&format=deepspeed")));
  EXPECT_EQ(ds["file_name"], "deepspeed_llama3-70b_tp8_pp4_dp2.json");
  json cfg = json::parse(ds["content"].get<std::string>());
  EXPECT_EQ(cfg["train_batch_size"], 512);
  EXPECT_EQ(cfg["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(cfg["gradient_accumulation_steps"], 256);
  EXPECT_FALSE(ds["notes"].empty());
  // The PyTorch CSV: one row per pipeline rank, 1F1B's F and B for each of 256 microbatches.
  json csv = Ok(Get(api, Target("/api/export", mine + "&format=pytorch-csv")));
  const std::string text = csv["content"];
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  const std::string row0 = text.substr(0, text.find('\n'));
  EXPECT_EQ(std::count(row0.begin(), row0.end(), ',') + 1, 2 * 256);
  // No degree: the planner's best, as /api/plan ranks it first.
  json best = Ok(Get(api, Target("/api/export", std::string(kJob) + "&format=megatron")));
  EXPECT_TRUE(best["planner_best"].get<bool>());
  EXPECT_EQ(best["layout"],
            Ok(Get(api, Target("/api/plan", std::string(kJob) + "&top=1")))["plans"][0]["layout"]);

  ExpectError(Get(api, Target("/api/export", mine)), 400, "format",
              "required, one of megatron, deepspeed");
  ExpectError(Get(api, Target("/api/export", mine + "&format=nemo")), 400, "format",
              "format 'nemo': expected one of");
  // No pipeline, no schedule to write.
  ExpectError(Get(api, Target("/api/export", std::string(kJob) + "&tp=8&pp=1&format=pytorch-csv")),
              400, "format", "format pytorch-csv: the plan has pp=1");
}

TEST(LabRequestsApiTest, WorkIsBoundedByTheTimeLimit) {
  ServerLimits none;
  none.time_limit = std::chrono::milliseconds(0);
  Api stopped = MakeApi(none);
  const std::string job = kJob;
  for (const std::string& target :
       {"/api/explain?" + job, "/api/worksheet?" + job, "/api/export?format=megatron&" + job}) {
    ExpectError(Get(stopped, target), 503, "", "time limit");
  }
  ExpectError(Post(stopped, "/api/worksheet/check?" + job,
                   ReadSource("tests/data/worksheet_good.md"), "text/markdown"),
              503, "", "time limit");
  // A scenario is computed once per server, to its end on its own thread: a request that cannot
  // wait for it gets a 503 that says so (the Api waits for the computation when it is destroyed).
  ExpectError(Get(stopped, "/api/scenarios?name=dp64-oom"), 503, "", "still being computed");
}

}  // namespace
}  // namespace infralens::server
