// Labs 08 and 12 in the web API, in-process: /api/presets, /api/topology, /api/comm,
// /api/comm-plan, /api/memory and /api/plan. Values are checked against facts derived by hand
// (Megatron's rank order, the alpha-beta formula, published parameter counts), each answer against
// the CLI's --json for the same request, and every refusal for the parameter it names.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "golden_test_util.h"
#include "server/api.h"
#include "server/api_test_util.h"

namespace infralens::server {
namespace {

using ::infralens::testing::RunCliCapture;
using nlohmann::json;
using testing::ExpectError;
using testing::Get;
using testing::Json;
using testing::MakeApi;
using testing::Ok;
using testing::PatientApi;
using testing::Post;

// The CLI's --json for the same request.
json CliJson(const std::vector<std::string>& args) {
  auto run = RunCliCapture(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out);
}

TEST(LabApiTest, PresetsAreTheCliPresets) {
  Api api = MakeApi();
  json all = Ok(Get(api, "/api/presets"));
  EXPECT_EQ(all, CliJson({"presets", "--json"}));
  // Meta's Llama 3 8B: 32 layers, hidden 4096, 32 heads, 8 KV heads (its config.json).
  bool found = false;
  for (const json& m : all["models"]) {
    if (m["name"] != "llama3-8b") continue;
    found = true;
    EXPECT_EQ(m["layers"], 32);
    EXPECT_EQ(m["hidden"], 4096);
    EXPECT_EQ(m["heads"], 32);
    EXPECT_EQ(m["kv_heads"], 8);
  }
  EXPECT_TRUE(found);
  json clusters = Ok(Get(api, "/api/presets?kind=clusters"));
  EXPECT_EQ(clusters, CliJson({"presets", "--kind", "clusters", "--json"}));
  ASSERT_EQ(clusters.size(), 1u);
  EXPECT_EQ(clusters["clusters"][0]["name"], "dgx-a100");
  ExpectError(Get(api, "/api/presets?kind=model"), 400, "kind", "did you mean 'models'?");
  ExpectError(Get(api, "/api/presets?kinds=models"), 400, "kinds", "unknown parameter");
}

// tp=8 dp=4 pp=2 on 8 DGX H100 (8 GPUs and 8 NICs a node, 32 nodes a scalable unit), order
// tp-cp-ep-dp-pp: rank = tp + 8 (dp + 4 pp). A TP group is one node's 8 GPUs (NVSwitch); a DP
// group {r, r+8, r+16, r+24} is one GPU on each of 4 nodes, all on the same local index, so on one
// rail; a PP group {r, r+32} spans 2 nodes, again on one rail.
TEST(LabApiTest, TopologyPlacesMegatronGroupsOnTheirLinks) {
  Api api = MakeApi();
  json t = Ok(Get(api, "/api/topology?cluster=dgx-h100&nodes=8&tp=8&dp=4&pp=2&coordinates=1"));
  EXPECT_EQ(t, CliJson({"topology", "--cluster", "dgx-h100", "--nodes", "8", "--tp", "8", "--dp",
                        "4", "--pp", "2", "--coordinates", "--json"}));
  EXPECT_EQ(t["cluster"]["gpus"], 64);
  ASSERT_EQ(t["axes"].size(), 3u);
  const json& tp = t["axes"][0];
  const json& dp = t["axes"][1];
  const json& pp = t["axes"][2];
  EXPECT_EQ(tp["axis"], "tp");
  EXPECT_EQ(tp["link"], "scale-up");
  EXPECT_EQ(tp["groups"], 8);
  EXPECT_EQ(tp["nodes_per_group"], 1);
  EXPECT_EQ(tp["group_ranks"][3], json::parse("[24,25,26,27,28,29,30,31]"));
  EXPECT_EQ(dp["axis"], "dp");
  EXPECT_EQ(dp["link"], "rail");
  EXPECT_EQ(dp["groups_per_link"], json::parse(R"({"rail": 16})"));
  EXPECT_EQ(dp["nodes_per_group"], 4);
  EXPECT_EQ(dp["group_ranks"][0], json::parse("[0,8,16,24]"));
  EXPECT_EQ(pp["axis"], "pp");
  EXPECT_EQ(pp["link"], "rail");
  EXPECT_EQ(pp["nodes_per_group"], 2);
  EXPECT_EQ(pp["group_ranks"][0], json::parse("[0,32]"));
  // The drawing: every GPU of the 8 nodes, coloured by TP (the fastest axis) by default; the TP
  // group of a GPU is its node, its DP coordinate (rank / 8) mod 4, its PP coordinate rank / 32.
  const json& d = t["drawing"];
  EXPECT_EQ(d["color_axis"], "tp");
  EXPECT_EQ(d["color_groups"], 8);
  EXPECT_EQ(d["nodes_drawn"], 8);
  ASSERT_EQ(d["gpus"].size(), 64u);
  for (int rank = 0; rank < 64; ++rank) {
    const json& g = d["gpus"][rank];
    EXPECT_EQ(g["rank"], rank);
    EXPECT_EQ(g["node"], rank / 8);
    EXPECT_EQ(g["rail"], rank % 8);
    EXPECT_EQ(g["color_group"], rank / 8);
    EXPECT_EQ(g["groups"]["tp"], rank / 8);
    EXPECT_EQ(g["coords"]["tp"], rank % 8);
    EXPECT_EQ(g["coords"]["dp"], (rank / 8) % 4);
    EXPECT_EQ(g["coords"]["pp"], rank / 32);
    // DP groups are numbered by (tp, pp) coordinates, tp fastest; PP groups by (tp, dp).
    EXPECT_EQ(g["groups"]["dp"], rank % 8 + 8 * (rank / 32));
    EXPECT_EQ(g["groups"]["pp"], rank % 32);
    EXPECT_EQ(g["links"], json::parse(R"({"tp": "scale-up", "dp": "rail", "pp": "rail"})"));
  }
  // 64 nodes are two scalable units of 32: a DP group of tp=8 dp=64 spans both, through the spine.
  json two_su = Ok(Get(api, "/api/topology?nodes=64&tp=8"));
  EXPECT_EQ(two_su["cluster"]["sus"], 2);
  EXPECT_EQ(two_su["axes"][1]["axis"], "dp");
  EXPECT_EQ(two_su["axes"][1]["link"], "spine");
  EXPECT_EQ(two_su["axes"][1]["sus_per_group"], 2);
  // Coloured by DP instead: 16 groups; GPU 9 (tp 1, dp 1, pp 0) is in DP group 1.
  json by_dp = Ok(Get(api, "/api/topology?nodes=8&tp=8&dp=4&pp=2&coordinates=1&color_axis=dp"));
  EXPECT_EQ(by_dp["drawing"]["color_axis"], "dp");
  EXPECT_EQ(by_dp["drawing"]["color_groups"], 16);
  EXPECT_EQ(by_dp["drawing"]["gpus"][9]["color_group"], 1);
  // Without coordinates the document is exactly `topology --json`; max_nodes bounds the drawing.
  EXPECT_EQ(Ok(Get(api, "/api/topology?nodes=8&tp=8&dp=4&pp=2")),
            CliJson({"topology", "--nodes", "8", "--tp", "8", "--dp", "4", "--pp", "2", "--json"}));
  json two = Ok(Get(api, "/api/topology?nodes=8&tp=8&coordinates=1&max-nodes=2"));
  EXPECT_EQ(two["drawing"]["gpus"].size(), 16u);
  HttpResponse svg = Get(api, "/api/topology?nodes=2&tp=8&format=svg");
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(svg.body,
            RunCliCapture({"topology", "--nodes", "2", "--tp", "8", "--format", "svg"}).out);
}

// The issue's 16,384 GPUs: 2,048 DGX H100 nodes, tp=8 pp=16 dp=128 (order tp-cp-ep-dp-pp, so
// rank = tp + 8 (dp + 128 pp)). The overview gives every GPU's colour group: by TP, a GPU's TP
// group is its node, rank / 8; by DP, its (tp, pp) coordinates, r mod 8 + 8 floor(r / 1024). The
// full drawing is only the window asked for: first_node 2040, 8 nodes, ranks 16320..16383, the
// last of them in SU 2047 / 32 = 63.
TEST(LabApiTest, TopologyOverviewCoversEveryNodeWhileTheDrawingIsAWindow) {
  Api api = MakeApi();
  const std::string job = "/api/topology?nodes=2048&tp=8&pp=16&dp=128&coordinates=1";
  json t = Ok(Get(api, job + "&first_node=2040&max_nodes=8"));
  const json& d = t["drawing"];
  EXPECT_EQ(d["first_node"], 2040);
  EXPECT_EQ(d["nodes_drawn"], 8);
  ASSERT_EQ(d["gpus"].size(), 64u);
  EXPECT_EQ(d["gpus"][0]["rank"], 16320);
  EXPECT_EQ(d["gpus"][63]["rank"], 16383);
  EXPECT_EQ(d["gpus"][63]["node"], 2047);
  EXPECT_EQ(d["gpus"][63]["su"], 63);
  const json& ov = d["overview"];
  EXPECT_EQ(ov["nodes"], 2048);
  EXPECT_EQ(ov["gpus_per_node"], 8);
  EXPECT_EQ(ov["nodes_per_su"], 32);
  ASSERT_EQ(ov["color_group"].size(), 16384u);
  for (int r = 0; r < 16384; ++r) ASSERT_EQ(ov["color_group"][r], r / 8) << "rank " << r;
  json by_dp = Ok(Get(api, job + "&color_axis=dp"));
  ASSERT_EQ(by_dp["drawing"]["overview"]["color_group"].size(), 16384u);
  for (int r = 0; r < 16384; ++r) {
    ASSERT_EQ(by_dp["drawing"]["overview"]["color_group"][r], r % 8 + 8 * (r / 1024)) << r;
  }
  EXPECT_EQ(by_dp["drawing"]["first_node"], 0);
  EXPECT_EQ(by_dp["drawing"]["gpus"].size(), 64u);  // max_nodes' default, 8
  // A window past the end is cut at the last node; one outside the cluster is refused.
  EXPECT_EQ(Ok(Get(api, job + "&first_node=2047"))["drawing"]["gpus"].size(), 8u);
  ExpectError(Get(api, job + "&first_node=2048"), 400, "first_node", "--first-node 2048");
  ExpectError(Get(api, job + "&first_node=-1"), 400, "first_node", "");
  // The CLI draws the same window.
  const std::string ascii = RunCliCapture({"topology", "--nodes", "2048", "--tp", "8", "--pp", "16",
                                           "--first-node", "2046", "--max-nodes", "4"})
                                .out;
  EXPECT_NE(ascii.find("... nodes 0 to 2045 not drawn"), std::string::npos);
  EXPECT_NE(ascii.find("- node 2047 . SU 63 . ranks 16376-16383 "), std::string::npos);
  EXPECT_EQ(ascii.find("- node 2045 "), std::string::npos);
  EXPECT_EQ(ascii.find("more node"), std::string::npos);
}

TEST(LabApiTest, TopologyRefusalsNameTheParameter) {
  Api api = MakeApi();
  ExpectError(Get(api, "/api/topology?tp=3"), 400, "", "multiply to 3");
  ExpectError(Get(api, "/api/topology?tp=0"), 400, "tp", "tp=0");
  ExpectError(Get(api, "/api/topology?cluster=dgx-h10"), 400, "cluster", "did you mean dgx-h100");
  // No request reads a file: a topology file is a CLI feature.
  ExpectError(Get(api, "/api/topology?cluster=../../etc/x.toml"), 400, "cluster", "preset name");
  ExpectError(Get(api, "/api/topology?cluster=/etc/passwd"), 400, "cluster", "preset name");
  ExpectError(Get(api, "/api/topology?nodes=8&tp=8&color_axis=xp"), 400, "color_axis",
              "expected tp, cp, ep, dp or pp");
  ExpectError(Get(api, "/api/topology?nodes=2&tp=8&order=tp-tp"), 400, "order", "appears twice");
  ExpectError(Get(api, "/api/topology?max_nodes=0"), 400, "max_nodes", "max_nodes=0");
  ExpectError(Get(api, "/api/topology?nodes=0"), 400, "nodes", "nodes=0");
  ExpectError(Get(api, "/api/topology?nodes=65537"), 400, "nodes", "nodes=65537");
  ExpectError(Get(api, "/api/topology?format=toml"), 400, "format", "json, svg, ascii");
  ExpectError(Get(api, "/api/topology?colour=tp"), 400, "colour", "unknown parameter");
  ExpectError(Get(api, "/api/topology?cluster=" + std::string(200, 'x')), 400, "cluster",
              "at most 100 characters");
}

// The textbook alpha-beta ring all-reduce: 2(n-1) steps of latency a and 2(n-1)/n S bytes per GPU
// at bandwidth B. n = 8, S = 1 GiB, B = 450 GB/s, a = 5 us: 70 us + 4175.66 us.
TEST(LabApiTest, CommRingAllReduceIsTheTextbookFormula) {
  Api api = MakeApi();
  json c = Ok(Get(api,
                  "/api/comm?cluster=dgx-h100&nodes=1&collective=all_reduce&size=1GiB&ranks=8&"
                  "algorithm=ring&bandwidth=450&latency=5"));
  EXPECT_EQ(c, CliJson({"comm", "--cluster", "dgx-h100", "--nodes", "1", "--collective",
                        "all_reduce", "--size", "1GiB", "--ranks", "8", "--algorithm", "ring",
                        "--bandwidth", "450", "--latency", "5", "--json"}));
  const double S = 1073741824.0, n = 8, B = 450e9, a = 5e-6;
  const double latency = 2 * (n - 1) * a;
  const double bandwidth = 2 * (n - 1) / n * S / B;
  EXPECT_NEAR(c["latency_us"].get<double>(), latency * 1e6, 1e-9);
  EXPECT_NEAR(c["bandwidth_us"].get<double>(), bandwidth * 1e6, 1e-6);
  EXPECT_NEAR(c["time_us"].get<double>(), 4245.66, 0.01);
  EXPECT_NEAR(c["algbw_GBps"].get<double>(), S / (latency + bandwidth) / 1e9, 1e-9);
  EXPECT_NEAR(c["busbw_GBps"].get<double>(), 1.75 * S / (latency + bandwidth) / 1e9, 1e-9);
  EXPECT_EQ(c["bottleneck_link"], "scale-up");
  EXPECT_EQ(c["algorithm"], "ring");
  EXPECT_EQ(c["group_ranks"], json::parse("[0,1,2,3,4,5,6,7]"));
  // A group of a placed job: the DP groups of tp=8 dp=4 pp=2 on 8 nodes cross one rail.
  json dp = Ok(Get(api, "/api/comm?nodes=8&tp=8&dp=4&pp=2&group=dp&size=512MiB"));
  EXPECT_EQ(dp, CliJson({"comm", "--nodes", "8", "--tp", "8", "--dp", "4", "--pp", "2", "--group",
                         "dp", "--size", "512MiB", "--json"}));
  EXPECT_EQ(dp["group"], "dp");
  EXPECT_EQ(dp["groups"], 16);
  EXPECT_EQ(dp["group_nodes"], 4);
  EXPECT_EQ(dp["size_bytes"], 512 << 20);
  EXPECT_EQ(dp["bottleneck_link"], "rail");
  // POST takes the same parameters, form-encoded.
  EXPECT_EQ(Json(Post(api, "/api/comm", "nodes=8&tp=8&dp=4&pp=2&group=dp&size=512MiB",
                      "application/x-www-form-urlencoded")),
            dp);
}

TEST(LabApiTest, CommRefusalsNameTheParameter) {
  Api api = MakeApi();
  ExpectError(Get(api, "/api/comm?collective=allreduse"), 400, "collective", "expected all_reduce");
  ExpectError(Get(api, "/api/comm?size=1XB"), 400, "size", "unknown unit");
  ExpectError(Get(api, "/api/comm?size=0"), 400, "size", "more than 0 bytes");
  ExpectError(Get(api, "/api/comm?nodes=1&tp=8&group=tp&ranks=8"), 400, "group",
              "one or the other");
  ExpectError(Get(api, "/api/comm?ranks=1"), 400, "ranks", "must be 2..8");
  ExpectError(Get(api, "/api/comm?ranks=9"), 400, "ranks", "must be 2..8");
  ExpectError(Get(api, "/api/comm?bandwidth=0"), 400, "bandwidth", "must be 0.001 to");
  ExpectError(Get(api, "/api/comm?bandwidth=1e9"), 400, "bandwidth", "bandwidth=1e9");
  ExpectError(Get(api, "/api/comm?latency=-1"), 400, "latency", "latency=-1");
  ExpectError(Get(api, "/api/comm?collective=all_gather&algorithm=tree"), 400, "algorithm",
              "does not apply to all_gather");
  ExpectError(Get(api, "/api/comm?nodes=2&tp=8&group=cp"), 400, "group", "no cp groups");
  ExpectError(Get(api, "/api/comm?algorithm=rings"), 400, "algorithm", "expected auto");
  // Issue 26: an invalid order is refused with ranks given too (it was ignored), and a subnormal
  // bandwidth is refused rather than answered with an infinite time.
  ExpectError(Get(api, "/api/comm?ranks=4&order=tp-xx"), 400, "order", "unknown axis 'xx'");
  ExpectError(Get(api, "/api/comm?bandwidth=1e-310"), 400, "bandwidth", "must be 0.001 to");
}

// Megatron's sequence-parallel layer (Korthikanti et al. 2022): per layer and microbatch, 2
// all-gathers and 2 reduce-scatters forward and again backward, each of the whole s x h BF16
// activation (S = 8192 x 8192 x 2 bytes = 128 MiB). Pipeline rank 1 holds 80 / 2 = 40 layers; 256
// sequences over dp = 4 are 64 microbatches: 4 x 40 x 64 = 10240 calls of each per step. Between
// the two stages each microbatch sends its activation and receives its gradient, split over the 8
// TP ranks by SP: 16 MiB, 2 x 64 = 128 times. Once per step the norms' gradients are summed over
// TP.
TEST(LabApiTest, CommPlanCountsWhatMegatronIssues) {
  Api api = MakeApi();
  json p = Ok(Get(api,
                  "/api/comm-plan?model=llama3-70b&cluster=dgx-h100&nodes=8&tp=8&pp=2&dp=4&sp=1&"
                  "global_batch=256"));
  EXPECT_EQ(p, CliJson({"comm-plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--nodes",
                        "8", "--tp", "8", "--pp", "2", "--dp", "4", "--sp", "--global-batch", "256",
                        "--json"}));
  EXPECT_EQ(p["microbatches"], 64);
  EXPECT_EQ(p["layers"], 40);
  double total = 0;
  int tp_items = 0, pp_items = 0;
  for (const json& it : p["items"]) {
    total += it["time_per_step_s"].get<double>();
    EXPECT_NEAR(it["time_per_step_s"].get<double>(),
                it["count_per_step"].get<double>() * it["time_per_call_s"].get<double>(), 1e-12);
    if (it["group"] == "tp" && it["count_per_step"] == 1) {
      // Once per step: the 40 layers' two RMSNorms (8,192 weights each) in BF16 gradients.
      EXPECT_EQ(it["message_bytes"], 40 * 2 * 8192.0 * 2);
      EXPECT_EQ(it["collective"], "all_reduce");
    } else if (it["group"] == "tp") {
      ++tp_items;
      EXPECT_EQ(it["message_bytes"], 8192.0 * 8192 * 2);
      EXPECT_EQ(it["count_per_step"], 4 * 40 * 64);
      EXPECT_EQ(it["link"], "scale-up");
      EXPECT_EQ(it["group_size"], 8);
    }
    if (it["group"] == "pp") {
      ++pp_items;
      EXPECT_EQ(it["message_bytes"], 8192.0 * 8192 * 2 / 8);
      EXPECT_EQ(it["count_per_step"], 2 * 64);
      EXPECT_EQ(it["collective"], "send_recv");
    }
  }
  EXPECT_EQ(tp_items, 2);
  EXPECT_EQ(pp_items, 1);
  EXPECT_NEAR(p["total_time_per_step_s"].get<double>(), total, 1e-9);
  ExpectError(Get(api, "/api/comm-plan?nodes=8&tp=8"), 400, "model", "required");
  ExpectError(Get(api, "/api/comm-plan?model=llama3-70b&nodes=8&tp=3&dp=1"), 400, "", "");
  ExpectError(Get(api, "/api/comm-plan?model=llama3-70b&nodes=2&tp=8&pp=2&recompute=some"), 400,
              "recompute", "");
  ExpectError(Get(api, "/api/comm-plan?model=llama3-70b&nodes=2&tp=8&pp=2&zero=4"), 400, "zero",
              "zero=4");
}

// Llama 2 7B has 6,738,415,616 parameters (Meta's release). Mixed-precision Adam with ZeRO-1 over
// 8 ranks: 2 bytes of weights, 2 of gradients, 12 / 8 of optimizer state per parameter.
TEST(LabApiTest, MemoryFollowsZero) {
  Api api = MakeApi();
  json m = Ok(Get(api, "/api/memory?model=llama2-7b&cluster=dgx-h100&gpus=8&zero=1"));
  EXPECT_EQ(m, CliJson({"memory", "--model", "llama2-7b", "--cluster", "dgx-h100", "--gpus", "8",
                        "--zero", "1", "--json"}));
  EXPECT_EQ(m["parallel"]["dp"], 8);  // derived: 8 GPUs over tp = pp = cp = 1
  const double P = 6738415616.0;
  EXPECT_EQ(m["weights_bytes"], 2 * P);
  EXPECT_EQ(m["gradients_bytes"], 2 * P);
  EXPECT_EQ(m["optimizer_bytes"], 12 * P / 8);
  EXPECT_EQ(m["hbm_bytes"], 80.0 * (1 << 30));
  EXPECT_EQ(m["usable_bytes"], 76.0 * (1 << 30));
  // ZeRO-3 shards the weights and gradients too.
  json z3 = Ok(Get(api, "/api/memory?model=llama2-7b&dp=8&fsdp=1"));
  EXPECT_EQ(z3["parallel"]["zero"], 3);
  EXPECT_EQ(z3["weights_bytes"], 2 * P / 8);
  ExpectError(Get(api, "/api/memory?model=llama2-7b&cluster=dgx-h101"), 400, "cluster",
              "did you mean dgx-h100?");
  ExpectError(Get(api, "/api/memory?model=llama2-7b&gpu=H100-SXM"), 400, "gpu", "");
  ExpectError(Get(api, "/api/memory?model=llama2-7b&tp=3"), 400, "tp",
              "tp 3: does not divide");  // as parameters, not flags
  ExpectError(Get(api, "/api/memory?model=llama2-7b&fsdp=1&zero=1"), 400, "zero", "ZeRO stage 3");
  ExpectError(Get(api, "/api/memory?model=llama2-7b&reserve_gib=-1"), 400, "reserve_gib", "");
  ExpectError(Get(api, "/api/memory?model=llama2-7b&global_batch=16385"), 400, "global_batch",
              "from 0 to 16384");
  ExpectError(Get(api, "/api/memory?model=llama2-7b&sp=maybe"), 400, "sp", "expected 1 or 0");
  ExpectError(Get(api, "/api/memory?model=/etc/passwd"), 400, "model", "preset names");
  ExpectError(Get(api, "/api/memory?model=lama2-7b"), 400, "model", "did you mean 'llama2-7b'?");
}

double Sum(const json& breakdown) {
  double s = 0;
  for (const auto& [k, v] : breakdown.items()) s += v.get<double>();
  return s;
}

TEST(LabApiTest, PlanSearchIsTheCliSearch) {
  Api api = PatientApi();
  json s =
      Ok(Get(api, "/api/plan?model=llama3-8b&cluster=dgx-h100&gpus=16&global_batch=256&top=5"));
  json cli = CliJson({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16",
                      "--global-batch", "256", "--top", "5", "--threads", "1", "--json"});
  // The same document but the wall time.
  s.erase("wall_s");
  cli.erase("wall_s");
  EXPECT_EQ(s, cli);
  EXPECT_EQ(s["request"]["gpus"], 16);
  EXPECT_EQ(s["request"]["nodes"], 2);
  ASSERT_EQ(s["plans"].size(), 5u);
  double last = 0;
  for (const json& plan : s["plans"]) {
    const json& par = plan["parallel"];
    // Every layout uses the 16 GPUs, splits the batch into whole microbatches and fits.
    EXPECT_EQ(
        par["tp"].get<int>() * par["pp"].get<int>() * par["dp"].get<int>() * par["cp"].get<int>(),
        16);
    EXPECT_EQ(
        plan["microbatches"].get<int>() * plan["micro_batch"].get<int>() * par["dp"].get<int>(),
        256);
    EXPECT_TRUE(plan["memory"]["fits"].get<bool>());
    EXPECT_LE(plan["memory"]["total_bytes"].get<double>(), 76.0 * (1 << 30));
    // Ranked by step time; the parts add up to it.
    EXPECT_GE(plan["step_time_s"].get<double>(), last);
    last = plan["step_time_s"];
    EXPECT_NEAR(Sum(plan["breakdown_s"]), plan["step_time_s"].get<double>(), 1e-9);
  }
  EXPECT_FALSE(s["explanation"]["winner"].get<std::string>().empty());
  EXPECT_FALSE(s["explanation"]["families"].empty());
}

// A search stopped at its limit (here a count of layouts, so that the test does not depend on the
// machine's speed) answers with the best of what it evaluated, marked partial, not with an error.
TEST(LabApiTest, PlanSearchStoppedAtItsLimitAnswersWithItsPartialRanking) {
  const std::string job =
      "/api/plan?model=llama3-8b&cluster=dgx-h100&gpus=16&global_batch=256&top=5";
  Api patient = PatientApi();
  json full = Ok(Get(patient, job));
  EXPECT_FALSE(full["partial"].get<bool>());
  const int64_t layouts = full["layouts"];
  EXPECT_EQ(full["evaluated"].get<int64_t>() + full["refused"].get<int64_t>(), layouts);
  ServerLimits limits;
  limits.time_limit = std::chrono::seconds(600);
  limits.max_search_layouts = 40;
  Api api = MakeApi(limits);
  json part = Ok(Get(api, job));
  EXPECT_TRUE(part["partial"].get<bool>());
  EXPECT_EQ(part["layouts"], layouts);
  // At most the 40 allowed were simulated (the memory pass asks once per 256 layouts); fewer than
  // all were looked at.
  EXPECT_LE(part["simulated"].get<int64_t>(), 40);
  EXPECT_GT(part["simulated"].get<int64_t>(), 0);
  EXPECT_LT(part["evaluated"].get<int64_t>() + part["refused"].get<int64_t>(), layouts);
  ASSERT_FALSE(part["plans"].empty());
  // The partial ranking is ranked, fits, and cannot beat the whole search's best.
  double last = 0;
  for (const json& plan : part["plans"]) {
    EXPECT_TRUE(plan["memory"]["fits"].get<bool>());
    EXPECT_GE(plan["step_time_s"].get<double>(), last);
    last = plan["step_time_s"];
    EXPECT_GE(plan["step_time_s"].get<double>(), full["plans"][0]["step_time_s"].get<double>());
  }
  // The memory of every layout is estimated before any is simulated (the most promising first), so
  // the partial search explains every family the whole search does.
  EXPECT_EQ(part["explanation"]["families"].size(), full["explanation"]["families"].size());
}

// search_seconds bounds the search as --search-seconds does: a bound the search stays inside
// changes nothing; one too short to evaluate a layout that fits is the caller's bound, named (not
// the server's time limit); values outside 0..3600 are refused.
TEST(LabApiTest, PlanSearchSecondsIsTheCliFlag) {
  const std::string job =
      "/api/plan?model=llama3-8b&cluster=dgx-h100&gpus=16&global_batch=256&top=5";
  Api api = PatientApi();
  json whole = Ok(Get(api, job));
  json bounded = Ok(Get(api, job + "&search_seconds=600"));
  whole.erase("wall_s");
  bounded.erase("wall_s");
  EXPECT_EQ(bounded, whole);
  ExpectError(Get(api, job + "&search_seconds=1e-9"), 400, "search_seconds",
              "before any layout that fits was evaluated");
  ExpectError(Get(api, job + "&search_seconds=-1"), 400, "search_seconds", "search_seconds=-1");
  ExpectError(Get(api, job + "&search_seconds=3601"), 400, "search_seconds", "search_seconds=3601");
  json cli = CliJson({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16",
                      "--global-batch", "256", "--top", "5", "--threads", "1", "--search-seconds",
                      "600", "--json"});
  cli.erase("wall_s");
  EXPECT_EQ(cli, whole);
}

TEST(LabApiTest, PlanEvaluatesOneLayoutWhenDegreesAreGiven) {
  Api api = MakeApi();
  json e = Ok(Get(api,
                  "/api/plan?model=llama3-70b&cluster=dgx-h100&gpus=64&global_batch=512&tp=8&pp=4&"
                  "schedule=1f1b&distributed_optimizer=1&sp=1"));
  EXPECT_EQ(e, CliJson({"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64",
                        "--global-batch", "512", "--tp", "8", "--pp", "4", "--schedule", "1f1b",
                        "--distributed-optimizer", "--sp", "--json"}));
  const json& plan = e["plan"];
  // dp = 64 / (8 x 4) = 2; 512 sequences / (1 x 2) = 256 microbatches.
  EXPECT_EQ(plan["parallel"]["dp"], 2);
  EXPECT_EQ(plan["microbatches"], 256);
  EXPECT_EQ(plan["parallel"]["zero"], 1);
  ASSERT_EQ(plan["memory"]["ranks"].size(), 4u);
  EXPECT_NEAR(Sum(plan["breakdown_s"]), plan["step_time_s"].get<double>(), 1e-9);
  // Throughput is tokens per step over the step time: 512 x 8192 tokens.
  EXPECT_NEAR(plan["tokens_per_s"].get<double>() * plan["step_time_s"].get<double>(), 512.0 * 8192,
              1e-3);
  EXPECT_EQ(plan["memory"]["offloaded_bytes"].get<double>(), 0);
}

// The API takes activation offloading as the CLI does: the bytes sent to the host are reported
// beside the GPU's, and the wait is one of the parts the step adds up from.
TEST(LabApiTest, PlanWithActivationOffloading) {
  Api api = MakeApi();
  json e = Ok(Get(api,
                  "/api/plan?model=llama3-8b&cluster=dgx-h100&gpus=8&global_batch=64&tp=1&pp=1&"
                  "recompute=none&cpu_offload_layers=8"));
  EXPECT_EQ(e, CliJson({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                        "--global-batch", "64", "--tp", "1", "--pp", "1", "--recompute", "none",
                        "--cpu-offload-layers", "8", "--json"}));
  const json& plan = e["plan"];
  EXPECT_GT(plan["memory"]["offloaded_bytes"].get<double>(), 0);
  EXPECT_TRUE(plan["breakdown_s"].contains("offload"));
  EXPECT_NEAR(Sum(plan["breakdown_s"]), plan["step_time_s"].get<double>(), 1e-9);
  EXPECT_EQ(e["request"]["behaviour"]["cpu_offload_layers"], 8);
}

// The framework's behaviour and the general layout are query parameters with the CLI's names and
// meanings: the same document as the CLI with the same flags.
TEST(LabApiTest, PlanTakesTheFrameworkAndTheLayoutAsTheCliDoes) {
  Api api = MakeApi();
  json e = Ok(Get(api,
                  "/api/plan?model=llama3-8b&cluster=dgx-h100&gpus=16&global_batch=256&tp=1&pp=4&"
                  "framework=torchtitan&tp_overlap=yes&layout=Et*7%7Ct*8%7Ct*8%7Ct*9L"));
  EXPECT_EQ(e, CliJson({"plan",
                        "--model",
                        "llama3-8b",
                        "--cluster",
                        "dgx-h100",
                        "--gpus",
                        "16",
                        "--global-batch",
                        "256",
                        "--tp",
                        "1",
                        "--pp",
                        "4",
                        "--framework",
                        "torchtitan",
                        "--tp-overlap",
                        "yes",
                        "--layout",
                        "Et*7|t*8|t*8|t*9L",
                        "--json"}));
  // torchtitan attends through SDPA's FlashAttention-2 (docs/planner.md); TP overlap as asked.
  EXPECT_EQ(e["request"]["behaviour"]["attention"], "flash2");
  EXPECT_EQ(e["request"]["behaviour"]["tp_overlap"], true);
  EXPECT_EQ(e["plan"]["parallel"]["stage_layout"], "Et*7|t*8|t*8|t*9L");
  json bad = Json(Get(api, "/api/plan?model=llama3-8b&gpus=16&global_batch=256&framework=titan"));
  EXPECT_EQ(bad["parameter"], "framework");
}

TEST(LabApiTest, PlanWorkIsBounded) {
  Api api = PatientApi();
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16"), 400, "global_batch",
              "a search needs it");
  ExpectError(Get(api, "/api/plan?global_batch=256&gpus=16"), 400, "model", "required");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16384&global_batch=0"), 400, "global_batch",
              "at least 1");
  // One rule for the GPU count (docs/cli.md): without gpus or nodes, one node of the cluster.
  EXPECT_EQ(Json(Get(api, "/api/plan?model=llama3-8b&global_batch=256&top=1"))["request"]["gpus"],
            8);
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16385&global_batch=256"), 400, "gpus",
              "from 1 to 16384");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&nodes=2049&global_batch=256"), 400, "nodes",
              "at most 16384 GPUs");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=12&global_batch=256"), 400, "gpus",
              "multiple of 8");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16&nodes=1&global_batch=256"), 400, "gpus",
              "1 nodes hold 8 GPUs");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16&global_batch=256&top=101"), 400, "top",
              "top=101");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16&global_batch=256&threads=2"), 400,
              "threads", "unknown parameter");
  ExpectError(Get(api, "/api/plan?model=llama3-8b&gpus=16&global_batch=256&precision=fp4"), 400,
              "precision", "bf16 or fp8");
  ExpectError(
      Get(api, "/api/plan?model=llama3-8b&cluster=dgx-a100&gpus=16&global_batch=256&precision=fp8"),
      400, "precision", "no FP8 tensor cores");
  ExpectError(Get(api, "/api/plan?model=gpt3-175b&gpus=8&global_batch=256"), 400, "",
              "does not fit");
  // A search stops at the time limit, between layouts: GPT 1T on 1,024 GPUs with 16,384 sequences
  // takes minutes on one core; with a 50 ms limit the answer comes at once: the ranking of what
  // it reached, marked partial, or a 503 when nothing it reached fits (which of the two depends
  // on the machine's speed).
  ServerLimits quick;
  quick.time_limit = std::chrono::milliseconds(50);
  Api fast = MakeApi(quick);
  const auto start = std::chrono::steady_clock::now();
  HttpResponse big = Get(fast, "/api/plan?model=gpt-1t&gpus=1024&global_batch=16384");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  if (big.status == 200) {
    EXPECT_TRUE(Json(big)["partial"].get<bool>());
  } else {
    ExpectError(big, 503, "", "time limit of 50 ms");
  }
  // Stopped in the memory pass (the search asks once per 256 layouts there): on 64 GPUs nothing
  // of GPT 1T fits (its 2 TB of bf16 weights), so nothing that fits was reached: a 503 naming the
  // limit, whatever the machine's speed. On 4,096 GPUs the most promising layouts estimated by
  // then include some that fit, and the best of them is simulated: a partial ranking of one (on
  // 1,024 the first 256 by compute have none since the GEMMs are timed by shape).
  ServerLimits one;
  one.time_limit = std::chrono::seconds(600);
  one.max_search_layouts = 1;
  Api single = MakeApi(one);
  ExpectError(Get(single, "/api/plan?model=gpt-1t&gpus=64&global_batch=16384"), 503, "",
              "the server's limit of 1 layouts");
  json first = Ok(Get(single, "/api/plan?model=gpt-1t&gpus=4096&global_batch=16384"));
  EXPECT_TRUE(first["partial"].get<bool>());
  EXPECT_EQ(first["simulated"].get<int64_t>(), 1);
  ASSERT_EQ(first["plans"].size(), 1u);
  EXPECT_TRUE(first["plans"][0]["memory"]["fits"].get<bool>());
  ServerLimits none;
  none.time_limit = std::chrono::milliseconds(0);
  Api stopped = MakeApi(none);
  for (const char* target :
       {"/api/topology", "/api/comm", "/api/comm-plan?model=llama3-8b",
        "/api/memory?model=llama3-8b", "/api/plan?model=llama3-8b&gpus=8&global_batch=64"}) {
    ExpectError(Get(stopped, target), 503, "", "time limit");
  }
}

}  // namespace
}  // namespace infralens::server
