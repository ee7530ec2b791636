#include "trace/kineto_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "trace/testing.h"

namespace infralens::trace {
namespace {

using trace::testing::CollectiveArgs;
using trace::testing::TraceBuilder;

std::string Gzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Sample() {
  return TraceBuilder()
      .Distributed(3, 8)
      .Step(7, 0, 100)
      .Launch(11, 5)
      .Kernel("void gemm<float>(\\\"quoted\\\", \\\\)", 7, 10, 20, 11)
      .Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 15, 30, 12,
              CollectiveArgs("allreduce", 1000, "Float", 8, "[0, 1, 2, 3, 4, 5, 6, 7]", 42))
      .Memcpy(7, 40, 2, 13)
      .Annotation("PP:0F3", 1, 8)
      .Raw(
          R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "s": "t", "args": {"Bytes": 8}})")
      .Raw(
          R"({"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})")
      .Json();
}

void ExpectSampleContent(const trace::RankTrace& t) {
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.backend, "nccl");
  EXPECT_EQ(t.events_total, 8);
  ASSERT_EQ(t.gpu.size(), 3u);
  EXPECT_EQ(t.names.Get(t.gpu[0].name), "void gemm<float>(\"quoted\", \\)");
  EXPECT_EQ(t.gpu[0].stream, 7);
  EXPECT_EQ(t.gpu[0].correlation, 11);
  EXPECT_DOUBLE_EQ(t.gpu[0].ts_us, 10);
  EXPECT_DOUBLE_EQ(t.gpu[0].dur_us, 20);
  EXPECT_EQ(t.gpu[0].cat, trace::GpuCat::kKernel);
  EXPECT_EQ(t.gpu[2].cat, trace::GpuCat::kMemcpy);
  ASSERT_EQ(t.gpu[1].collective, 0);
  const trace::CollectiveMeta& m = t.collectives[0];
  EXPECT_EQ(m.name, "allreduce");
  EXPECT_EQ(m.in_nelems, 1000);
  EXPECT_EQ(m.group_size, 8);
  EXPECT_EQ(m.dtype, "Float");
  EXPECT_EQ(m.pg_name, "0");
  EXPECT_EQ(m.pg_ranks, "[0, 1, 2, 3, 4, 5, 6, 7]");
  EXPECT_EQ(m.seq, 42);
  ASSERT_EQ(t.launches.size(), 1u);
  EXPECT_EQ(t.launches[0].correlation, 11);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].step, 7);
  ASSERT_EQ(t.pp.size(), 1u);
  EXPECT_EQ(t.names.Get(t.pp[0].name), "PP:0F3");
  EXPECT_TRUE(t.first_event_kept);  // ProfilerStep#7 comes first and has dur and cat
  EXPECT_DOUBLE_EQ(t.first_event_ts_us, 0);
}

TEST(KinetoReaderTest, ReadsTheFieldsItKeeps) {
  auto t = ReadKinetoTraceBytes(Sample(), "sample");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ExpectSampleContent(*t);
  EXPECT_EQ(t->json_bytes, Sample().size());
}

// Chunk and batch boundaries anywhere give the same result: every event split across reads.
TEST(KinetoReaderTest, TinyChunksGiveTheSameResult) {
  for (size_t chunk : {1, 2, 3, 7, 64}) {
    KinetoReadOptions o;
    o.chunk_bytes = chunk;
    o.batch_bytes = 1;
    auto t = ReadKinetoTraceBytes(Sample(), "sample", o);
    ASSERT_TRUE(t.ok()) << chunk << ": " << t.status().message();
    ExpectSampleContent(*t);
  }
}

// The events parsed on a second thread (KinetoReadOptions::parse_on_second_thread) give what
// parsing them in the reader's thread gives: every field of every kept record, on the shared real
// traces (gzip, several batches each) and the sample cut into tiny batches; and the same first
// error on a trace broken in several places, whichever thread finds it.
void ExpectSameTrace(const trace::RankTrace& a, const trace::RankTrace& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.json_bytes, b.json_bytes);
  EXPECT_EQ(a.events_total, b.events_total);
  EXPECT_EQ(a.first_event_kept, b.first_event_kept);
  EXPECT_EQ(a.first_event_ts_us, b.first_event_ts_us);
  ASSERT_EQ(a.names.size(), b.names.size());
  for (uint32_t i = 0; i < a.names.size(); ++i) EXPECT_EQ(a.names.Get(i), b.names.Get(i));
  ASSERT_EQ(a.gpu.size(), b.gpu.size());
  for (size_t i = 0; i < a.gpu.size(); ++i) {
    const trace::GpuEvent &x = a.gpu[i], &y = b.gpu[i];
    EXPECT_TRUE(x.ts_us == y.ts_us && x.dur_us == y.dur_us && x.correlation == y.correlation &&
                x.stream == y.stream && x.name == y.name && x.collective == y.collective &&
                x.cat == y.cat)
        << i;
  }
  ASSERT_EQ(a.launches.size(), b.launches.size());
  for (size_t i = 0; i < a.launches.size(); ++i) {
    EXPECT_TRUE(a.launches[i].correlation == b.launches[i].correlation &&
                a.launches[i].ts_us == b.launches[i].ts_us &&
                a.launches[i].tid == b.launches[i].tid &&
                a.launches[i].external_id == b.launches[i].external_id)
        << i;
  }
  EXPECT_EQ(a.steps.size(), b.steps.size());
  EXPECT_EQ(a.pp.size(), b.pp.size());
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    EXPECT_EQ(a.collectives[i].name, b.collectives[i].name);
    EXPECT_EQ(a.collectives[i].seq, b.collectives[i].seq);
  }
  EXPECT_EQ(a.autograd_ops.size(), b.autograd_ops.size());
  EXPECT_EQ(a.p2p_calls.size(), b.p2p_calls.size());
  EXPECT_EQ(a.shaped_ops.size(), b.shaped_ops.size());
}

TEST(KinetoReaderTest, SecondThreadParseEqualsSequential) {
  std::vector<std::string> files;
  const std::string shared = trace::testing::SharedTracesDir();
  if (!shared.empty()) {
    for (const auto& d : std::filesystem::recursive_directory_iterator(shared)) {
      const std::string p = d.path().string();
      if (d.is_regular_file() && (p.ends_with(".json") || p.ends_with(".gz"))) files.push_back(p);
    }
  }
  KinetoReadOptions small;  // many batches and chunks even in a small file
  small.chunk_bytes = 64 << 10;
  small.batch_bytes = 4 << 10;
  for (const std::string& f : files) {
    auto seq = ReadKinetoTraceFile(f, small);
    KinetoReadOptions two = small;
    two.parse_on_second_thread = true;
    auto par = ReadKinetoTraceFile(f, two);
    ASSERT_EQ(seq.ok(), par.ok()) << f;
    if (!seq.ok()) {
      EXPECT_EQ(seq.status().message(), par.status().message());
      continue;
    }
    ExpectSameTrace(*seq, *par);
  }
  KinetoReadOptions tiny;
  tiny.chunk_bytes = 7;
  tiny.batch_bytes = 1;
  tiny.parse_on_second_thread = true;
  auto t = ReadKinetoTraceBytes(Sample(), "sample", tiny);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ExpectSampleContent(*t);
  // Broken twice: an event simdjson refuses (worker), then a scanner error later (reader).
  std::string broken = Sample();
  const size_t gemm = broken.find("\"ts\": 10");
  ASSERT_NE(gemm, std::string::npos);
  broken.replace(gemm, 8, "\"ts\"  10");  // no colon
  broken.replace(broken.rfind('}'), 1, "]");
  for (size_t chunk : {size_t{7}, size_t{64}, size_t{1} << 20}) {
    KinetoReadOptions o;
    o.chunk_bytes = chunk;
    o.batch_bytes = 1;
    auto s1 = ReadKinetoTraceBytes(broken, "broken", o);
    o.parse_on_second_thread = true;
    auto s2 = ReadKinetoTraceBytes(broken, "broken", o);
    ASSERT_FALSE(s1.ok());
    ASSERT_FALSE(s2.ok());
    EXPECT_EQ(s1.status().message(), s2.status().message()) << chunk;
  }
}

TEST(KinetoReaderTest, ReadsGzipIncludingConcatenatedMembers) {
  const std::string json = Sample();
  auto t = ReadKinetoTraceBytes(Gzip(json), "sample.gz");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ExpectSampleContent(*t);
  // gzip(1) concatenation: two members make one stream.
  auto two = ReadKinetoTraceBytes(Gzip(json.substr(0, 100)) + Gzip(json.substr(100)), "two.gz");
  ASSERT_TRUE(two.ok()) << two.status().message();
  ExpectSampleContent(*two);
}

TEST(KinetoReaderTest, EventsToReserveIsBoundedByTheBudget) {
  TraceMemoryBudget big;                   // the default 860 MiB
  EXPECT_EQ(EventsToReserve(0, big), 0u);  // size unknown: nothing reserved
  EXPECT_EQ(EventsToReserve(256 * 1000, big), 1000u);
  EXPECT_EQ(EventsToReserve(256 * 1000 + 255, big), 1000u);
  // A file that says it holds 1 TB of JSON: no more than the budget's room would let it keep,
  // (168 + 40) bytes of analysis per GPU event with its launch.
  TraceMemoryBudget small(uint64_t{1} << 20);
  EXPECT_EQ(EventsToReserve(uint64_t{1} << 40, small), (uint64_t{1} << 20) / 208);
  // What other files of the job already hold is not room.
  ASSERT_TRUE(small.Charge(uint64_t{1} << 19));
  EXPECT_EQ(EventsToReserve(uint64_t{1} << 40, small), (uint64_t{1} << 19) / 208);
  ASSERT_FALSE(small.Charge(uint64_t{1} << 20));  // beyond the limit
  EXPECT_EQ(EventsToReserve(uint64_t{1} << 40, small), 0u);
}

TEST(KinetoReaderTest, ReserveLargeKeepsTheElementsAndNeverShrinks) {
  std::vector<GpuEvent> v(3);
  v[2].stream = 9;
  ReserveLarge(v, 200'000);  // 9.6 MB: huge pages advised over it
  EXPECT_GE(v.capacity(), 200'000u);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2].stream, 9);
  const size_t cap = v.capacity();
  ReserveLarge(v, 10);
  EXPECT_EQ(v.capacity(), cap);
  while (v.size() < 200'000) v.push_back(GpuEvent{});  // written through the advice
  EXPECT_EQ(v.capacity(), cap);
}

// A trace of 10 kernels and `cpu_ops` CPU operators (skipped by the reader, but they make the
// file large): as JSON and gzip, its event vectors are reserved from the size of the JSON.
std::string PaddedTrace(int cpu_ops) {
  TraceBuilder b;
  for (int i = 0; i < 10; ++i) b.Launch(i, i).Kernel("k", 7, 100 + i, 1, i);
  for (int i = 0; i < cpu_ops; ++i) {
    b.Raw(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::view", "pid": 1, "tid": 1, "ts": {}, )"
        R"("dur": 1, "args": {{"External id": {}}}}})",
        i, i));
  }
  return b.Json();
}

TEST(KinetoReaderTest, ReservesTheEventVectorsFromTheFileSize) {
  const std::string json = PaddedTrace(4000);
  const size_t expect = json.size() / kJsonBytesPerReservedEvent;
  ASSERT_GT(expect, 1000u);  // far more than the 10 kept: the room came from the size
  const std::string dir = trace::testing::TestDir("files");
  std::filesystem::create_directories(dir);
  const std::string gz = Gzip(json);
  std::ofstream(dir + "/t.json", std::ios::binary) << json;
  std::ofstream(dir + "/t.json.gz", std::ios::binary) << gz;
  // (Checked where it was read: a copy of a vector does not keep its room.)
  auto check = [&](const StatusOr<RankTrace>& read, const std::string& what) {
    ASSERT_TRUE(read.ok()) << read.status().message();
    ASSERT_EQ(read->gpu.size(), 10u) << what;
    ASSERT_EQ(read->launches.size(), 10u) << what;
    EXPECT_GE(read->gpu.capacity(), expect) << what;  // gzip: from the trailer's length
    EXPECT_GE(read->launches.capacity(), expect) << what;
    EXPECT_LT(read->gpu.capacity(), 2 * expect) << what;
  };
  check(ReadKinetoTraceBytes(json, "t.json"), "json bytes");
  check(ReadKinetoTraceBytes(gz, "t.json.gz"), "gzip bytes");
  check(ReadKinetoTraceFile(dir + "/t.json"), "json file");
  check(ReadKinetoTraceFile(dir + "/t.json.gz"), "gzip file");
  std::filesystem::remove_all(dir);
}

TEST(KinetoReaderTest, AGzipTrailerThatLiesIsBoundedAndRefused) {
  // The trailer says 4 GiB - 1 of JSON: the reservation stays within the budget's room (16 MiB
  // here: about 80,000 events), and the length check refuses the file at its end.
  std::string gz = Gzip(PaddedTrace(10));
  std::memset(gz.data() + gz.size() - 4, 0xff, 4);
  KinetoReadOptions o;
  o.budget_limit_bytes = uint64_t{16} << 20;
  auto t = ReadKinetoTraceBytes(gz, "lies.gz", o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("lies.gz: corrupt gzip data"), std::string::npos)
      << t.status().message();
}

TEST(KinetoReaderTest, DistributedInfoAfterTheEventsAndArrayForm) {
  auto t = ReadKinetoTraceBytes(
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}],
          "deviceProperties": [{"id": 0, "name": "A100"}], "distributedInfo": {"rank": 5, "world_size": 6,
          "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 6, "ranks": [0, 1, 2, 3, 4, 5]}]}})",
      "after");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->rank, 5);
  EXPECT_EQ(t->world_size, 6);
  ASSERT_EQ(t->process_groups.size(), 1u);
  EXPECT_EQ(t->process_groups[0].ranks.size(), 6u);
  EXPECT_EQ(t->gpu.size(), 1u);
  // The Trace Event Format's array form.
  auto a = ReadKinetoTraceBytes(
      R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}])",
      "array");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->gpu.size(), 1u);
}

// `json` read as a file called `label` in chunks of `chunk` bytes.
StatusOr<RankTrace> ReadInChunksOf(const std::string& json, const std::string& label,
                                   size_t chunk) {
  KinetoReadOptions o;
  o.chunk_bytes = chunk;
  return ReadKinetoTraceBytes(json, label, o);
}

// deviceProperties as libkineto writes it (output_json.cpp, devicePropertiesJson), before or after
// the events, whatever the chunk size; odd elements and fields of another type are skipped.
TEST(KinetoReaderTest, DeviceProperties) {
  const std::string json =
      R"({"schemaVersion": 1, "deviceProperties": [
          {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
           "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 132},
          7, {"id": "1", "name": ["odd"], "totalGlobalMem": 1.5e10}],
        "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}]})";
  for (size_t chunk : {size_t{3}, size_t{1} << 20}) {
    auto t = ReadInChunksOf(json, "dev", chunk);
    ASSERT_TRUE(t.ok()) << t.status().message();
    ASSERT_EQ(t->devices.size(), 2u);
    EXPECT_EQ(t->devices[0].id, 0);
    EXPECT_EQ(t->devices[0].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(t->devices[0].total_global_mem_bytes, 85029158912);
    EXPECT_EQ(t->devices[0].compute_major, 9);
    EXPECT_EQ(t->devices[0].compute_minor, 0);
    EXPECT_EQ(t->devices[1].id, 1);  // a string id, as GetInt reads it
    EXPECT_EQ(t->devices[1].name, "");
    EXPECT_EQ(t->devices[1].total_global_mem_bytes, 15000000000);
    EXPECT_EQ(t->gpu.size(), 1u);
  }
  // Bounded: a hostile array keeps kMaxDeviceProperties entries and names of kMaxDeviceNameBytes.
  std::string many = R"({"deviceProperties": [)";
  for (size_t i = 0; i < trace::kMaxDeviceProperties + 10; ++i)
    many += (i ? "," : "") + std::string(R"({"name": ")") + std::string(1000, 'x') + "\"}";
  many += R"(], "traceEvents": []})";
  auto m = ReadKinetoTraceBytes(many, "many");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->devices.size(), trace::kMaxDeviceProperties);
  EXPECT_EQ(m->devices[0].name.size(), trace::kMaxDeviceNameBytes);
  // Not JSON inside: one line naming it.
  auto bad =
      ReadKinetoTraceBytes(R"({"deviceProperties": [{"name" "x"}], "traceEvents": []})", "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad: invalid deviceProperties"), std::string::npos)
      << bad.status().message();
}

// A file may name "traceEvents" twice (concatenated by hand): both arrays are read, and a batch
// never spans the bytes between them, whatever the chunk size.
TEST(KinetoReaderTest, TwoEventArrays) {
  const std::string k =
      R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}})";
  const std::string json =
      "{\"traceEvents\": [" + k + ", " + k + "], \"x\": 1, \"traceEvents\": [" + k + "]}";
  for (size_t chunk : {size_t{3}, size_t{1} << 20}) {
    auto t = ReadInChunksOf(json, "two", chunk);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->gpu.size(), 3u);
  }
}

// Values written as strings, non-integer streams (HTA maps them to -1: not a GPU event), args
// before cat, missing dur (dropped as HTA does), GPU-side user annotations (not GPU work).
TEST(KinetoReaderTest, OddButValidEvents) {
  auto t = ReadKinetoTraceBytes(
      R"({"traceEvents": [
        {"args": {"stream": "7", "correlation": 3}, "ph": "X", "cat": "kernel", "name": "a", "ts": "10.5", "dur": "2"},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 1, "dur": 2, "args": {"stream": "stream 7"}},
        {"ph": "X", "cat": "kernel", "name": "c", "ts": 1, "args": {"stream": 7}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "d", "ts": 1, "dur": 5, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "e", "ts": 1, "dur": -4, "args": {"stream": 7}}
      ]})",
      "odd");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->gpu.size(), 1u);
  EXPECT_EQ(t->names.Get(t->gpu[0].name), "a");
  EXPECT_DOUBLE_EQ(t->gpu[0].ts_us, 10.5);
  EXPECT_EQ(t->gpu[0].stream, 7);
  EXPECT_EQ(t->gpu[0].correlation, 3);
}

void ExpectError(const std::string& input, const std::string& fragment, KinetoReadOptions o = {}) {
  auto t = ReadKinetoTraceBytes(input, "in.json", o);
  ASSERT_FALSE(t.ok()) << "accepted: " << input.substr(0, 200);
  EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().message().find('\n'), std::string::npos)
      << "one line: " << t.status().message();
  EXPECT_EQ(t.status().message().rfind("in.json: ", 0), 0u)
      << "names the input: " << t.status().message();
}

// Numbers are read at once when they are plain (an int64 for ids, a double for times) and through
// the slower checks otherwise: each form gives what the JSON says, and a field that is no number
// keeps its default.
TEST(KinetoReaderTest, NumbersInEveryForm) {
  auto t = ReadKinetoTraceBytes(
      R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "tid": 5, "ts": 10, "dur": 2.5, "args": {"stream": 7, "correlation": 3}},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 1e1, "dur": "2", "args": {"stream": 7.0, "correlation": "4"}},
        {"ph": "X", "cat": "kernel", "name": "c", "ts": 1, "dur": 1, "args": {"stream": 9223372036854775808, "correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "d", "ts": 1, "dur": 1, "args": {"stream": -3, "correlation": 1.9}},
        {"ph": "X", "cat": "kernel", "name": "e", "ts": 1, "dur": 1, "args": {"stream": 8, "correlation": null}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 12.75, "ts": "3", "dur": 1, "args": {"correlation": 3, "External id": "17"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": "x", "ts": 4, "dur": 1, "args": {"correlation": 6, "External id": true}}
      ]})",
      "numbers");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->gpu.size(), 4u);
  EXPECT_DOUBLE_EQ(t->gpu[0].ts_us, 10);
  EXPECT_DOUBLE_EQ(t->gpu[0].dur_us, 2.5);
  EXPECT_EQ(t->gpu[0].stream, 7);
  EXPECT_EQ(t->gpu[0].correlation, 3);
  EXPECT_DOUBLE_EQ(t->gpu[1].ts_us, 10);  // 1e1
  EXPECT_DOUBLE_EQ(t->gpu[1].dur_us, 2);  // "2"
  EXPECT_EQ(t->gpu[1].stream, 7);         // 7.0: a double with an integer value
  EXPECT_EQ(t->gpu[1].correlation, 4);    // "4"
  EXPECT_EQ(t->gpu[2].stream, -3);
  EXPECT_EQ(t->gpu[2].correlation, 1);   // 1.9 truncated
  EXPECT_EQ(t->gpu[3].correlation, -1);  // null: the default
  // "c": 2^63 does not fit in int64 and, as a double, is past the 9.2e18 accepted: no stream, so
  // not a GPU event, but a CPU event with a correlation id (HTA's test for a GPU event is an
  // integer stream).
  ASSERT_EQ(t->launches.size(), 3u);
  EXPECT_EQ(t->launches[0].correlation, 5);
  EXPECT_EQ(t->launches[1].tid, 12);  // 12.75 truncated
  EXPECT_DOUBLE_EQ(t->launches[1].ts_us, 3);
  EXPECT_EQ(t->launches[1].external_id, 17);
  EXPECT_EQ(t->launches[2].tid, 0);           // "x": the default
  EXPECT_EQ(t->launches[2].external_id, -1);  // true: the default
}

TEST(KinetoReaderTest, ErrorsAreOneLineNamingTheProblem) {
  ExpectError("", "empty file");
  ExpectError("   \n", "empty file");
  ExpectError("hello", "expected a JSON object");
  ExpectError(R"({"traceEvents": 3})", "not an array");
  ExpectError(R"({"schemaVersion": 1})", "no \"traceEvents\"");
  ExpectError(R"({"traceEvents": [{"a": 1} {"b": 2}]})", "missing ','");
  ExpectError(R"({"traceEvents": [{"a": 1},]})", "trailing ','");
  ExpectError(R"({"traceEvents": [1, 2]})", "traceEvents[0] is not an object");
  ExpectError(R"({"traceEvents": [{"a": [1}]})", "unexpected '}'");
  ExpectError(R"({"traceEvents": [{"cat": 5}]})", "traceEvents[0]");
  ExpectError(R"({"traceEvents": [{"a": 1}]} x)", "after the end");
  ExpectError(R"({"a": 1 "b": 2, "traceEvents": []})", "expected ',' or '}'");
  ExpectError(R"({"a": 12 34, "traceEvents": []})", "expected ',' or '}'");
  ExpectError(
      R"({"traceEvents": [{"ts": 1, "dur": 1, "cat": "kernel", "args": {"stream": 7 "x": 1}}]})",
      "traceEvents[0]");
  ExpectError(Sample().substr(0, Sample().size() / 2), "truncated");
  ExpectError(Gzip(Sample()).substr(0, 60), "truncated gzip");
  std::string corrupt = Gzip(Sample());
  corrupt[20] ^= 0x55;
  corrupt[21] ^= 0x55;
  ExpectError(corrupt, "gzip");
  KinetoReadOptions small;
  small.max_event_bytes = 64;
  small.chunk_bytes = 16;
  ExpectError(Sample(), "larger than 64 bytes", small);
  ExpectError(R"({"traceEvents": [{"a": )" + std::string(300, '['), "nested deeper");
}

// Every prefix of a valid trace is refused (never accepted, never a crash).
TEST(KinetoReaderTest, EveryTruncationIsAnError) {
  const std::string json = Sample();
  const std::string gz = Gzip(json);
  for (size_t n = 0; n < json.size() - 2; ++n) {  // the last bytes are "}\n" then nothing
    EXPECT_FALSE(ReadKinetoTraceBytes(json.substr(0, n), "p").ok()) << n;
  }
  for (size_t n = 0; n < gz.size(); ++n)
    EXPECT_FALSE(ReadKinetoTraceBytes(gz.substr(0, n), "p").ok()) << n;
}

TEST(KinetoReaderTest, MissingFileIsNotFound) {
  auto t = ReadKinetoTraceFile("/nonexistent/trace.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace infralens::trace
