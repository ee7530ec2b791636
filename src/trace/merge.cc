#include "trace/merge.h"

#include <fmt/format.h>

#include <map>

#include "base/json_writer.h"

namespace infralens::trace {

StatusOr<MergeSummary> MergeTraces(const std::vector<RankTrace>& traces,
                                   const AnalysisOptions& options, const MergeWriter& write) {
  MergeSummary summary;
  summary.ranks = static_cast<int64_t>(traces.size());
  ASSIGN_OR_RETURN(TraceAnalysis a, Analyze(traces, options));
  std::map<int64_t, double> offset;
  if (a.cross.instances + a.cross.p2p_instances > 0) {
    summary.aligned = true;
    summary.matched = a.cross.instances + a.cross.p2p_instances;
    for (const RankResult& r : a.ranks) offset[r.rank] = r.clock_offset_us;
  } else {
    summary.note = traces.size() < 2
                       ? "one rank"
                       : (a.cross.note.empty() ? "no matched collectives" : a.cross.note);
  }
  ASSIGN_OR_RETURN(
      KernelClassifier classifier,
      KernelClassifier::Create(options.hta_compat, options.comm_pattern, options.memory_pattern));

  fmt::memory_buffer buf;
  Status write_status;
  auto flush = [&](bool force) {
    if (!force && buf.size() < (1u << 20)) return;
    if (write_status.ok()) write_status = write(std::string_view(buf.data(), buf.size()));
    buf.clear();
  };
  bool first = true;
  auto sep = [&] {
    if (!first) buf.append(std::string_view(",\n"));
    first = false;
  };
  auto q = [](std::string_view s) { return JsonWriter::Escape(s); };
  buf.append(std::string_view("{\"displayTimeUnit\": \"ms\",\n\"traceEvents\": [\n"));
  for (const RankTrace& t : traces) {
    if (!write_status.ok()) break;  // reported below; no point formatting the rest
    const int64_t pid = t.rank;
    const double off = offset.count(t.rank) ? offset[t.rank] : 0.0;
    sep();
    fmt::format_to(std::back_inserter(buf),
                   "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"tid\": 0, "
                   "\"args\": {{\"name\": "
                   "\"rank {}\"}}}},\n{{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": "
                   "{}, \"tid\": 0, "
                   "\"args\": {{\"sort_index\": {}}}}}",
                   pid, t.rank, pid, t.rank);
    std::map<int64_t, bool> streams;
    for (const GpuEvent& g : t.gpu) streams[g.stream] = true;
    for (const auto& [s, unused] : streams) {
      sep();
      fmt::format_to(std::back_inserter(buf),
                     "{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
                     "\"args\": {{\"name\": "
                     "\"stream {}\"}}}}",
                     pid, s, s);
    }
    // CPU annotations on their own threads, numbered after the streams.
    std::map<int64_t, int64_t> cpu_tid;
    int64_t next_tid = 1'000'000;
    auto tid_of = [&](int64_t tid) {
      auto [it, inserted] = cpu_tid.emplace(tid, next_tid);
      if (inserted) {
        ++next_tid;
        sep();
        fmt::format_to(std::back_inserter(buf),
                       "{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
                       "\"args\": {{\"name\": "
                       "\"CPU thread {}\"}}}}",
                       pid, it->second, tid);
      }
      return it->second;
    };
    std::vector<int8_t> cls(t.names.size(), -1);
    for (const GpuEvent& g : t.gpu) {
      if (cls[g.name] < 0)
        cls[g.name] = static_cast<int8_t>(classifier.Classify(t.names.Get(g.name), g.cat));
      sep();
      fmt::format_to(std::back_inserter(buf),
                     "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, "
                     "\"ts\": {:.3f}, "
                     "\"dur\": {:.3f}, \"args\": {{\"stream\": {}, \"correlation\": {}",
                     KernelClassName(static_cast<KernelClass>(cls[g.name])), q(t.names.Get(g.name)),
                     pid, g.stream, g.ts_us - off, g.dur_us, g.stream, g.correlation);
      if (g.collective >= 0) {
        const CollectiveMeta& m = t.collectives[g.collective];
        fmt::format_to(std::back_inserter(buf),
                       ", \"Collective name\": {}, \"In msg nelems\": {}, \"Out msg nelems\": {}, "
                       "\"Group size\": {}, "
                       "\"dtype\": {}, \"Process Group Name\": {}",
                       q(m.name), m.in_nelems, m.out_nelems, m.group_size, q(m.dtype),
                       q(m.pg_name));
        if (m.seq >= 0) fmt::format_to(std::back_inserter(buf), ", \"Seq\": {}", m.seq);
      }
      buf.append(std::string_view("}}"));
      ++summary.events;
      flush(false);
    }
    for (const auto* list : {&t.steps, &t.pp}) {
      for (const Annotation& an : *list) {
        const int64_t tid = tid_of(an.tid);
        sep();
        fmt::format_to(std::back_inserter(buf),
                       "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {}, "
                       "\"tid\": {}, "
                       "\"ts\": {:.3f}, \"dur\": {:.3f}}}",
                       q(t.names.Get(an.name)), pid, tid, an.ts_us - off, an.dur_us);
        ++summary.events;
        flush(false);
      }
    }
  }
  fmt::format_to(std::back_inserter(buf),
                 "\n],\n\"otherData\": {{\"merged_by\": \"infralens trace merge\", "
                 "\"clock_alignment\": {}}}\n}}\n",
                 q(summary.aligned ? fmt::format("collective ends, {} instances", summary.matched)
                                   : summary.note));
  flush(true);
  RETURN_IF_ERROR(write_status);
  return summary;
}

}  // namespace infralens::trace
