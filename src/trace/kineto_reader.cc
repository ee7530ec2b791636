#include "trace/kineto_reader.h"

#include <fmt/format.h>
#include <isa-l/igzip_lib.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "base/strings.h"
#include "base/units.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace infralens::trace {

namespace {

namespace od = simdjson::ondemand;

// ---------------------------------------------------------------------------------------------
// Byte sources: a file, memory, and gzip over either.

class Source {
 public:
  virtual ~Source() = default;
  // Up to `cap` bytes into `dst`; 0 at the end of the input.
  virtual StatusOr<size_t> Read(char* dst, size_t cap) = 0;
};

// A FILE read to its end; closed at the end unless it is stdin (`owned` false). `bytes` counts
// what was read, the size of a pipe that cannot be asked for it.
class FileSource : public Source {
 public:
  FileSource(std::FILE* f, std::string label, bool owned = true)
      : f_(f), label_(std::move(label)), owned_(owned) {}
  ~FileSource() override {
    if (owned_) std::fclose(f_);
  }
  StatusOr<size_t> Read(char* dst, size_t cap) override {
    size_t n = std::fread(dst, 1, cap, f_);
    if (n == 0 && std::ferror(f_))
      return IoError(fmt::format("{}: read failed: {}", label_, std::strerror(errno)));
    bytes_ += n;
    return n;
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::FILE* f_;
  std::string label_;
  bool owned_;
  uint64_t bytes_ = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  StatusOr<size_t> Read(char* dst, size_t cap) override {
    size_t n = std::min(cap, data_.size() - pos_);
    if (n > 0) std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Prepends bytes already read (the magic-number probe) to another source.
class PrefixSource : public Source {
 public:
  PrefixSource(std::string prefix, Source* rest) : prefix_(std::move(prefix)), rest_(rest) {}
  StatusOr<size_t> Read(char* dst, size_t cap) override {
    if (pos_ < prefix_.size()) {
      size_t n = std::min(cap, prefix_.size() - pos_);
      std::memcpy(dst, prefix_.data() + pos_, n);
      pos_ += n;
      return n;
    }
    return rest_->Read(dst, cap);
  }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  Source* rest_;
};

// Inflates a gzip stream (several concatenated members allowed, as gzip(1) writes them) with
// Intel ISA-L's igzip (libisal-dev): 1.4-1.5x zlib's speed on traces (docs/performance.md,
// "Streaming inflate"), streaming, with the same checks (gzip header, CRC-32 and length).
class GzipSource : public Source {
 public:
  GzipSource(Source* raw, std::string label) : raw_(raw), label_(std::move(label)), in_(kInBytes) {
    isal_inflate_init(&st_);
    st_.crc_flag = ISAL_GZIP;  // the gzip wrapper: header parsed, CRC-32 and size checked
  }
  StatusOr<size_t> Read(char* dst, size_t cap) override {
    if (done_) return size_t{0};
    cap = std::min<size_t>(cap, 1u << 30);
    size_t produced = 0;
    while (produced < cap) {
      if (st_.avail_in == 0) {
        ASSIGN_OR_RETURN(size_t n, raw_->Read(in_.data(), in_.size()));
        compressed_ += n;
        if (n == 0) {
          if (!at_member_start_) {
            return InvalidArgument(fmt::format(
                "{}: truncated gzip stream (ends after {} compressed bytes)", label_, compressed_));
          }
          done_ = true;
          break;
        }
        st_.next_in = reinterpret_cast<uint8_t*>(in_.data());
        st_.avail_in = static_cast<uint32_t>(n);
      }
      if (at_member_start_) {
        // Between members: trailing zero padding ends the stream, anything else must be gzip.
        while (st_.avail_in > 0 && *st_.next_in == 0) ++st_.next_in, --st_.avail_in;
        if (st_.avail_in == 0) continue;
        at_member_start_ = false;
      }
      st_.next_out = reinterpret_cast<uint8_t*>(dst + produced);
      st_.avail_out = static_cast<uint32_t>(cap - produced);
      const int rc = isal_inflate(&st_);
      produced = cap - st_.avail_out;
      if (rc != ISAL_DECOMP_OK) {
        return InvalidArgument(fmt::format("{}: corrupt gzip data after {} compressed bytes ({})",
                                           label_, compressed_ - st_.avail_in, IsalError(rc)));
      }
      if (st_.block_state == ISAL_BLOCK_FINISH) {
        // The next member, if any, starts in the input left over.
        uint8_t* next_in = st_.next_in;
        const uint32_t avail_in = st_.avail_in;
        isal_inflate_reset(&st_);
        st_.crc_flag = ISAL_GZIP;
        st_.next_in = next_in;
        st_.avail_in = avail_in;
        at_member_start_ = true;
      }
    }
    return produced;
  }

 private:
  static const char* IsalError(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK:
        return "invalid deflate block";
      case ISAL_INVALID_SYMBOL:
        return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK:
        return "invalid lookback distance";
      case ISAL_INVALID_WRAPPER:
        return "invalid gzip header";
      case ISAL_UNSUPPORTED_METHOD:
        return "unsupported compression method";
      case ISAL_INCORRECT_CHECKSUM:
        return "incorrect checksum";
      default:
        return "igzip error";
    }
  }
  static constexpr size_t kInBytes = 1 << 18;
  Source* raw_;
  std::string label_;
  std::vector<char> in_;
  inflate_state st_;
  bool done_ = false;
  bool at_member_start_ = true;
  uint64_t compressed_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Field helpers.

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// A number that may be written as a JSON number or a string ("ts": "12.5" occurs in the wild).
bool GetDouble(od::value v, double* out) {
  // A number, nearly always: parsed at once (On Demand moves past a scalar only when it is read,
  // so a value of another type is still there for the checks below).
  // (*out is written only on success: callers keep their default otherwise.)
  double d;
  if (v.get_double().get(d) == simdjson::SUCCESS) {
    *out = d;
    return true;
  }
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) return !v.get_double().get(*out);
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    auto d = ParseDouble(s);
    if (!d) return false;
    *out = *d;
    return true;
  }
  return false;
}

bool GetInt(od::value v, int64_t* out) {
  // An integer that fits in int64, nearly always: parsed at once. get_int64 succeeds exactly when
  // get_number_type says signed_integer (no fraction, no exponent, in range), as below, and
  // moves past the value only when it succeeds.
  int64_t i;
  if (v.get_int64().get(i) == simdjson::SUCCESS) {
    *out = i;
    return true;
  }
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    od::number_type nt;
    if (v.get_number_type().get(nt)) return false;
    if (nt == od::number_type::signed_integer) return !v.get_int64().get(*out);
    double d;
    if (v.get_double().get(d)) return false;
    if (!(d >= -9.2e18 && d <= 9.2e18)) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    auto i = ParseInt(s);
    if (!i) return false;
    *out = *i;
    return true;
  }
  return false;
}

bool GetString(od::value v, std::string* out) {
  std::string_view s;
  if (v.get_string().get(s)) return false;
  out->assign(s);
  return true;
}

// "Process Group Ranks" is a string "[0, 1]" in Kineto's output; accept a JSON array too.
bool GetRankList(od::value v, std::string* out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::string) return GetString(v, out);
  if (t != od::json_type::array) return false;
  od::array a;
  if (v.get_array().get(a)) return false;
  std::string s = "[";
  bool first = true;
  for (auto e : a) {
    int64_t r;
    if (e.error() || !GetInt(e.value_unsafe(), &r)) return false;
    if (s.size() > 4096) return false;
    s += first ? "" : ", ";
    s += std::to_string(r);
    first = false;
  }
  *out = s + "]";
  return true;
}

struct EventArgs {
  int64_t external_id = -1;  // "External id" (kept for launches; trace calibrate's join)
  bool has_stream = false;
  int64_t stream = -1;
  int64_t correlation = -1;
  bool has_collective = false;
  trace::CollectiveMeta meta;
};

// Categories whose args never hold a stream or a correlation id: their args are skipped unread.
bool CpuOnlyCategory(std::string_view cat) {
  return cat == "cpu_op" || cat == "user_annotation" || cat == "python_function" ||
         cat == "cpu_instant_event" || cat == "gpu_user_annotation" || cat == "fwdbwd" ||
         cat == "ac2g" || cat == "Trace";
}

simdjson::error_code ParseArgs(od::value v, EventArgs* a) {
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field : obj) {
    od::raw_json_string key;  // compared raw, as in HandleEvent
    if (auto e = field.key().get(key)) return e;
    od::value fv;
    if (auto e = field.value().get(fv)) return e;
    switch (key.raw()[0]) {
      case 's':
        if (key.unsafe_is_equal("stream")) {
          int64_t s;
          // HTA (hta/utils/utils.py normalize_gpu_stream_numbers) maps a non-integer stream to -1.
          a->has_stream = GetInt(fv, &s);
          a->stream = a->has_stream ? s : -1;
        }
        break;
      case 'c':
        if (key.unsafe_is_equal("correlation")) {
          int64_t c;
          if (GetInt(fv, &c)) a->correlation = c;
        }
        break;
      case 'C':
        if (key.unsafe_is_equal("Collective name"))
          a->has_collective |= GetString(fv, &a->meta.name);
        break;
      case 'I':
        if (key.unsafe_is_equal("In msg nelems"))
          a->has_collective |= GetInt(fv, &a->meta.in_nelems);
        break;
      case 'O':
        if (key.unsafe_is_equal("Out msg nelems"))
          a->has_collective |= GetInt(fv, &a->meta.out_nelems);
        break;
      case 'G':
        if (key.unsafe_is_equal("Group size")) GetInt(fv, &a->meta.group_size);
        break;
      case 'd':
        if (key.unsafe_is_equal("dtype")) GetString(fv, &a->meta.dtype);
        break;
      case 'P':
        if (key.unsafe_is_equal("Process Group Name")) {
          if (!GetString(fv, &a->meta.pg_name)) {
            int64_t n;
            if (GetInt(fv, &n)) a->meta.pg_name = std::to_string(n);
          }
        } else if (key.unsafe_is_equal("Process Group Description")) {
          GetString(fv, &a->meta.pg_desc);
        } else if (key.unsafe_is_equal("Process Group Ranks")) {
          GetRankList(fv, &a->meta.pg_ranks);
        }
        break;
      case 'S':
        if (key.unsafe_is_equal("Seq")) {
          GetInt(fv, &a->meta.seq);
        } else if (key.unsafe_is_equal("Src Rank")) {
          GetInt(fv, &a->meta.src);
        }
        break;
      case 'D':
        if (key.unsafe_is_equal("Dst Rank")) GetInt(fv, &a->meta.dst);
        break;
      case 'E':
        if (key.unsafe_is_equal("External id")) GetInt(fv, &a->external_id);
        break;
      default:
        break;
    }
  }
  return simdjson::SUCCESS;
}

// A JSON array's text as written, if it is an array no longer than kMaxShapeJsonBytes.
bool GetRawArray(od::value v, std::string* out) {
  od::array a;
  if (v.get_array().get(a)) return false;
  std::string_view raw;
  if (a.raw_json().get(raw)) return false;
  raw = Trim(raw);
  if (raw.size() > trace::kMaxShapeJsonBytes) return false;
  out->assign(raw);
  return true;
}

// The args of a calibration operator (trace::IsCalibrationOpName), as PyTorch's profiler writes
// them with record_shapes=True (torch/csrc/autograd/profiler_kineto.cpp: "Input Dims",
// "Input type", "Concrete Inputs"; libkineto/src/output_json.cpp: "External id").
simdjson::error_code ParseShapedOpArgs(od::value v, trace::ShapedOp* op, bool* has_dims) {
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field : obj) {
    od::raw_json_string key;
    if (auto e = field.key().get(key)) return e;
    od::value fv;
    if (auto e = field.value().get(fv)) return e;
    if (key.unsafe_is_equal("External id")) {
      GetInt(fv, &op->external_id);
    } else if (key.unsafe_is_equal("Input Dims")) {
      *has_dims = GetRawArray(fv, &op->input_dims);
    } else if (key.unsafe_is_equal("Input type")) {
      GetRawArray(fv, &op->input_types);
    } else if (key.unsafe_is_equal("Concrete Inputs")) {
      GetRawArray(fv, &op->concrete_inputs);
    }
  }
  return simdjson::SUCCESS;
}

// "ProfilerStep#12" -> 12 (HTA: re.match(r"ProfilerStep\s*#\s*(\d+)")); -1 otherwise.
int64_t ProfilerStepNumber(std::string_view name) {
  std::string_view rest = name.substr(std::string_view("ProfilerStep").size());
  rest = Trim(rest);
  if (rest.empty() || rest[0] != '#') return -1;
  rest = Trim(rest.substr(1));
  size_t n = 0;
  while (n < rest.size() && n < 18 && rest[n] >= '0' && rest[n] <= '9') ++n;
  if (n == 0) return -1;
  return *ParseInt(rest.substr(0, n));
}

// ---------------------------------------------------------------------------------------------
// The streaming parser.

const char* FindQuoteOrBackslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, b)));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

// Bit masks of one 64-byte block: quotes, backslashes, opening and closing brackets ({ [ and } ]).
struct BlockMasks {
  uint64_t quote = 0, backslash = 0, open = 0, close = 0;
};

BlockMasks ClassifyBlock(const char* p) {
  BlockMasks m;
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), lower = _mm_set1_epi8(0x20),
                open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
  for (int k = 0; k < 4; ++k) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    // '[' | 0x20 == '{' and ']' | 0x20 == '}'; no other byte maps there.
    __m128i folded = _mm_or_si128(v, lower);
    const int shift = 16 * k;
    m.quote |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, q))))
               << shift;
    m.backslash |=
        static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, bs))))
        << shift;
    m.open |= static_cast<uint64_t>(
                  static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open))))
              << shift;
    m.close |= static_cast<uint64_t>(
                   static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close))))
               << shift;
  }
#else
  for (int i = 0; i < 64; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    const char c = p[i];
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if (c == '{' || c == '[') m.open |= bit;
    if (c == '}' || c == ']') m.close |= bit;
  }
#endif
  return m;
}

// Characters escaped by an odd run of backslashes (simdjson's stage-1 technique: Langdale and
// Lemire, "Parsing Gigabytes of JSON per Second", VLDB Journal 2019). `carry` is 1 when the
// previous block ended inside an odd run.
uint64_t EscapedChars(uint64_t backslash, uint64_t* carry) {
  const uint64_t even_bits = 0x5555555555555555ULL, odd_bits = ~even_bits;
  const uint64_t start_edges = backslash & ~(backslash << 1);
  const uint64_t even_start_mask = even_bits ^ *carry;
  const uint64_t even_starts = start_edges & even_start_mask;
  const uint64_t odd_starts = start_edges & ~even_start_mask;
  const uint64_t even_carries = backslash + even_starts;
  uint64_t odd_carries;
  const bool ends_odd = __builtin_add_overflow(backslash, odd_starts, &odd_carries);
  odd_carries |= *carry;
  *carry = ends_odd ? 1 : 0;
  const uint64_t even_carry_ends = even_carries & ~backslash;
  const uint64_t odd_carry_ends = odd_carries & ~backslash;
  return (even_carry_ends & odd_bits) | (odd_carry_ends & even_bits);
}

// Bit i set when an odd number of bits at or below i are set: inside a string, from its opening
// quote up to (not including) its closing quote.
uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Complete events handed to simdjson at once: "[" events "]" and padding, with where each event
// starts in the file and the index of the first in traceEvents, for messages.
struct EventBatch {
  std::vector<char> json;
  size_t size = 0;               // JSON bytes, brackets included
  std::vector<uint64_t> starts;  // byte offset of each event in the file
  int64_t first_index = 0;       // traceEvents index of the first event
  uint64_t base = 0;             // byte offset of the first event
};

// Parses batches on a thread of its own while the reader inflates and scans the next ones: the
// two halves of reading one file on two cores. Batches are parsed one at a time in the order they
// are handed over, so what is kept is what parsing them in the reader's thread keeps; the first
// error stops the worker and is returned by every later Submit and by Finish.
class BatchWorker {
 public:
  explicit BatchWorker(std::function<Status(const EventBatch&)> parse)
      : parse_(std::move(parse)), thread_([this] { Loop(); }) {}
  // Joins the thread; its error, if any, was already taken by whoever called Finish (a worker
  // destroyed without it is one whose read failed first, and that error is the one reported).
  ~BatchWorker() { static_cast<void>(Finish()); }
  BatchWorker(const BatchWorker&) = delete;
  BatchWorker& operator=(const BatchWorker&) = delete;

  // Hands `b` over once the batch before it has been taken up; `b` comes back as a spent batch
  // to be filled again.
  Status Submit(EventBatch& b) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return !has_pending_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    std::swap(pending_, b);
    has_pending_ = true;
    cv_.notify_all();
    return Status::Ok();
  }
  // Waits until every batch handed over is parsed; the first error.
  Status Finish() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    return error_;
  }

 private:
  void Loop() {
    EventBatch working;
    while (true) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return has_pending_ || done_; });
        if (!has_pending_) return;
        std::swap(working, pending_);
        has_pending_ = false;
        cv_.notify_all();
      }
      Status st = parse_(working);
      if (!st.ok()) {
        std::lock_guard lock(mu_);
        error_ = std::move(st);
        cv_.notify_all();
        return;
      }
    }
  }

  std::function<Status(const EventBatch&)> parse_;
  std::mutex mu_;
  std::condition_variable cv_;
  EventBatch pending_;
  bool has_pending_ = false, done_ = false;
  Status error_;
  std::thread thread_;  // last: started once the rest is built
};

// What HandleEvent reads of one event, before it decides where the event goes.
struct EventFields {
  std::string_view cat, name;
  bool has_cat = false, has_name = false, has_ts = false, has_dur = false, args_done = false;
  bool done_early = false;  // a CPU event of which nothing more is needed: the rest is skipped
  bool calib_op = false, calib_dims = false;  // a trace::IsCalibrationOpName operator
  trace::ShapedOp shaped;
  double ts = 0, dur = 0;
  int64_t tid = 0;
  EventArgs args;

  bool CpuOnly() const { return has_cat && CpuOnlyCategory(cat); }
};

// The event's "name". A CPU operator's name is read only when it can be a step or a pipelining
// annotation.
inline void ReadEventName(od::value v, int64_t index, EventFields* f) {
  if (f->CpuOnly()) {
    const std::string_view raw = v.raw_json_token();
    if (f->cat == "cpu_op" && StartsWith(raw, "\"aten::")) {
      f->has_name = !v.get_string().get(f->name);
      f->calib_op = f->has_name && trace::IsCalibrationOpName(f->name);
      if (f->calib_op) return;
    }
    if (!StartsWith(raw, "\"ProfilerStep") && !StartsWith(raw, "\"PP:") &&
        !StartsWith(raw, "\"autograd::engine::evaluate_function") &&
        !StartsWith(raw, "\"record_param_comms\"")) {
      // Nothing else of this CPU event is needed (except the very first event's times,
      // for HTA's join quirk): the rest of the object is skipped unread.
      if (index != 0) f->done_early = true;
      return;
    }
  }
  f->has_name = !v.get_string().get(f->name);
}

// The event's "args", when they are needed: an error inside args that are read (see below), or
// SUCCESS (args that are not an object are ignored).
inline simdjson::error_code ReadEventArgs(od::value v, EventFields* f) {
  // Args that are read are read to their end, and a JSON error inside them is the
  // trace's error: swallowed, it would leave the parser wherever it stopped, and the
  // result would depend on how the input was cut into batches (fuzz_kineto_trace found
  // a form feed for a comma inside a shaped operator's args read as valid in small
  // batches and invalid in large ones).
  if (f->CpuOnly() && f->has_name && f->name == "record_param_comms") {
    // Its metadata names the peer of a send / recv (trace::P2pCall).
    if (auto e = ParseArgs(v, &f->args)) {
      od::json_type t;
      if (!v.type().get(t) && t != od::json_type::object) return simdjson::SUCCESS;
      return e;
    }
    f->args_done = true;
    return simdjson::SUCCESS;
  }
  if (f->CpuOnly()) {
    // (A writer that puts "name" after "args" loses the shapes: Kineto never does.)
    if (f->calib_op) {
      if (auto e = ParseShapedOpArgs(v, &f->shaped, &f->calib_dims)) {
        f->calib_dims = false;
        od::json_type t;
        if (!v.type().get(t) && t != od::json_type::object) return simdjson::SUCCESS;
        return e;
      }
    }
    return simdjson::SUCCESS;
  }
  if (auto e = ParseArgs(v, &f->args)) {
    od::json_type t;
    if (!v.type().get(t) && t != od::json_type::object)
      return simdjson::SUCCESS;  // args that is not an object: ignored
    return e;
  }
  f->args_done = true;
  return simdjson::SUCCESS;
}

class KinetoParser {
 public:
  KinetoParser(std::string label, const KinetoReadOptions& opt, trace::RankTrace* out)
      : label_(std::move(label)),
        opt_(opt),
        out_(out),
        own_budget_(opt.budget_limit_bytes),
        budget_(opt.budget != nullptr ? opt.budget : &own_budget_) {}

  // Before Run: about how many bytes of JSON the input holds (0: unknown), to reserve the event
  // vectors once (EventsToReserve).
  void set_json_size_hint(uint64_t bytes) { json_size_hint_ = bytes; }
  Status Run(Source& src);
  // The chunks of `src` to the end: read, scanned, their events handed to FlushBatch.
  Status ReadAll(Source& src, size_t cap, size_t max_cap);
  // Gives back what this read charged to the budget (its trace was not kept).
  void Refund() {
    budget_->Release(charged_);
    charged_ = 0;
  }

 private:
  enum class Root { kNone, kObject, kArray, kDone };
  enum class Expect { kKey, kColon, kValue, kCommaOrEnd, kInScalar };

  // The bytes outside traceEvents, one at a time: the root object's keys and separators, the
  // values of other keys (capturing distributedInfo and deviceProperties); traceEvents itself
  // goes to ScanEventBlocks.
  Status Scan(bool eof);
  // Inside a string: to its closing quote, or to the end of the buffer.
  void ScanString();
  // The document's first byte (after a byte order mark): '{' or an array of events.
  Status OnRootStart(char c);
  // A byte of the root object's level: keys, colons, values and separators.
  Status OnRootObjectByte(char c);
  // A byte inside a root-level value other than traceEvents (deviceProperties, distributedInfo,
  // ...).
  Status OnNestedRootValueByte(char c);
  // The traceEvents array, 64 bytes at a time: leaves block mode at the array's end.
  Status ScanEventBlocks(bool eof);
  // Between two elements of traceEvents: whitespace and one comma (none before the first element
  // and before the closing bracket).
  Status CheckGap(const char* block, size_t block_pos, size_t at, bool closing);
  Status OnRootValueStart(char c);
  void EnterBlockMode(size_t at) {
    block_mode_ = true;
    prev_in_string_ = 0;
    prev_escape_ = 0;
    gap_start_ = at;
    after_event_ = false;
  }
  Status OnEventComplete(size_t begin, size_t end);
  // Hands the complete events collected so far to ParseBatch: in this thread, or to the worker.
  Status FlushBatch();
  Status ParseBatch(const EventBatch& batch);
  // One element of traceEvents: its fields read (EventFields), then kept where it belongs.
  Status HandleEvent(od::object obj, int64_t index);
  // A complete event HTA keeps, with finite times: a shaped operator, a pipeline operator, an
  // event on a GPU stream, or a CPU event (a launch, a step, a PP: annotation).
  void KeepEvent(EventFields* f, int64_t index);
  void KeepShapedOp(EventFields* f);
  // An autograd backward or a record_param_comms send / recv (false: neither).
  bool KeepPipelineOp(const EventFields& f);
  void KeepGpuEvent(EventFields* f);
  void KeepCpuEvent(const EventFields& f);
  Status ParseDistributedInfo(std::string_view json);
  Status ParseDeviceProperties(std::string_view json);
  // Charges the budget with what the events kept so far will cost; an error beyond its limit.
  // `json_bytes`: where in the file the last event parsed ends, for the message.
  Status ChargeKept(uint64_t json_bytes);
  Status Error(size_t at, std::string_view what) const {
    return InvalidArgument(
        fmt::format("{}: invalid JSON at byte {}: {}", label_, discarded_ + at, what));
  }

  std::string label_;
  KinetoReadOptions opt_;
  trace::RankTrace* out_;

  std::unique_ptr<char[]> buf_;
  size_t len_ = 0;          // valid bytes in buf_
  size_t pos_ = 0;          // next byte to scan
  uint64_t discarded_ = 0;  // bytes dropped from the front of buf_ so far

  // Scanner state.
  std::vector<char> stack_;  // open brackets
  bool in_string_ = false;
  bool escape_pending_ = false;  // the buffer ended right after a backslash inside a string
  size_t string_start_ = 0;
  Root root_ = Root::kNone;
  Expect expect_ = Expect::kKey;
  bool key_string_ = false;  // the open string is a root-level key
  std::string key_;          // the last root-level key
  size_t events_depth_ = 0;  // stack depth of the open traceEvents array; 0 when none is open
  bool saw_trace_events_ = false;
  size_t event_start_ = SIZE_MAX;    // start of the open event
  bool block_mode_ = false;          // scanning traceEvents a block at a time
  uint64_t prev_in_string_ = 0;      // all ones when the previous block ended inside a string
  uint64_t prev_escape_ = 0;         // 1 when it ended in an odd run of backslashes
  size_t gap_start_ = 0;             // first byte after the '[' or after the last event
  bool after_event_ = false;         // an element has been seen in traceEvents
  size_t capture_start_ = SIZE_MAX;  // start of the root value being captured (see capture_key_)
  std::string capture_key_;          // "distributedInfo" or "deviceProperties"

  // Complete events waiting for simdjson: [batch_begin_, batch_end_) plus each event's start.
  size_t batch_begin_ = SIZE_MAX, batch_end_ = 0;
  std::vector<size_t> batch_starts_;
  int64_t events_seen_ = 0;  // events handed to the batch so far

  od::parser parser_;
  EventBatch batch_;
  std::unique_ptr<BatchWorker> worker_;  // with KinetoReadOptions::parse_on_second_thread

  TraceMemoryBudget own_budget_;
  TraceMemoryBudget* budget_;
  uint64_t charged_ = 0;  // bytes this read has charged to budget_
  uint64_t json_size_hint_ = 0;
};

Status KinetoParser::ChargeKept(uint64_t json_bytes) {
  const trace::RankTrace& t = *out_;
  const uint64_t kept =
      t.gpu.size() * kAnalysisBytesPerGpuEvent + t.launches.size() * kAnalysisBytesPerLaunch +
      (t.steps.size() + t.pp.size()) * sizeof(trace::Annotation) +
      t.collectives.size() * sizeof(trace::CollectiveMeta) +
      t.autograd_ops.size() * sizeof(trace::CpuSpan) + t.p2p_calls.size() * sizeof(trace::P2pCall) +
      t.shaped_ops.size() * sizeof(trace::ShapedOp);
  if (kept <= charged_) return Status::Ok();
  const uint64_t more = kept - charged_;
  charged_ = kept;
  if (budget_->Charge(more)) return Status::Ok();
  const uint64_t per_kernel = kAnalysisBytesPerGpuEvent + kAnalysisBytesPerLaunch;
  return ResourceExhausted(fmt::format(
      "{}: too large to analyse: after {} GPU events and {} CPU launches ({} MB of JSON) the "
      "analysis would need more than its memory budget of {}{} (‹memory_limit› raises it; about "
      "{} bytes per kernel with its launch: at most about {:.1f} million kernels)",
      label_, t.gpu.size(), t.launches.size(), json_bytes / 1'000'000,
      FormatBytes(static_cast<int64_t>(budget_->limit_bytes())),
      budget_ == &own_budget_ ? "" : " for all the files together", per_kernel,
      static_cast<double>(budget_->limit_bytes()) / per_kernel / 1e6));
}

Status KinetoParser::Run(Source& src) {
  // The buffer holds one chunk plus the unfinished event carried over; it grows only when an
  // event is larger than a chunk, up to chunk_bytes + max_event_bytes.
  const size_t max_cap = opt_.chunk_bytes + opt_.max_event_bytes + simdjson::SIMDJSON_PADDING;
  size_t cap = std::min(max_cap, 2 * opt_.chunk_bytes + simdjson::SIMDJSON_PADDING);
  buf_.reset(new char[cap]);
  const size_t reserve = EventsToReserve(json_size_hint_, *budget_);
  ReserveLarge(out_->gpu, reserve);
  ReserveLarge(out_->launches, reserve);
  if (opt_.parse_on_second_thread) {
    worker_ = std::make_unique<BatchWorker>([this](const EventBatch& b) { return ParseBatch(b); });
  }
  Status st = ReadAll(src, cap, max_cap);
  if (worker_ != nullptr) {
    // The worker's error comes first in the file (its batches were handed over before the
    // reader's error, if any), as it does when the batches are parsed in this thread.
    Status parsed = worker_->Finish();
    worker_.reset();
    if (!parsed.ok()) return parsed;
  }
  RETURN_IF_ERROR(st);
  if (root_ == Root::kNone) {
    return InvalidArgument(fmt::format(
        "{}: empty file; expected a JSON trace (an object with \"traceEvents\")", label_));
  }
  if (root_ != Root::kDone) {
    if (events_depth_ != 0) {
      return InvalidArgument(
          fmt::format("{}: truncated: the file ends inside traceEvents after {} complete events "
                      "(byte {})",
                      label_, events_seen_, discarded_ + len_));
    }
    return InvalidArgument(fmt::format(
        "{}: truncated: the JSON document is not closed at the end of the file (byte {})", label_,
        discarded_ + len_));
  }
  if (!saw_trace_events_)
    return InvalidArgument(
        fmt::format("{}: no \"traceEvents\" array; not a Chrome/Kineto trace", label_));
  return Status::Ok();
}

Status KinetoParser::ReadAll(Source& src, size_t cap, size_t max_cap) {
  while (true) {
    // Drop what is no longer needed: everything before the open event / capture / key.
    size_t keep = pos_;
    if (event_start_ != SIZE_MAX) keep = std::min(keep, event_start_);
    if (capture_start_ != SIZE_MAX) keep = std::min(keep, capture_start_);
    if (in_string_ && key_string_) keep = std::min(keep, string_start_ - 1);
    if (block_mode_ && event_start_ == SIZE_MAX) keep = std::min(keep, gap_start_);
    if (keep > 0) {
      std::memmove(buf_.get(), buf_.get() + keep, len_ - keep);
      len_ -= keep;
      pos_ -= keep;
      discarded_ += keep;
      if (event_start_ != SIZE_MAX) event_start_ -= keep;
      if (capture_start_ != SIZE_MAX) capture_start_ -= keep;
      if (in_string_) string_start_ -= keep;
      if (block_mode_) gap_start_ -= keep;
    }
    if (len_ > opt_.max_event_bytes) {
      if (capture_start_ != SIZE_MAX) {
        return InvalidArgument(fmt::format("{}: {} is larger than {} bytes", label_, capture_key_,
                                           opt_.max_event_bytes));
      }
      return InvalidArgument(
          fmt::format("{}: traceEvents[{}] (at byte {}) is larger than {} bytes; not a trace event",
                      label_, events_seen_, discarded_, opt_.max_event_bytes));
    }
    if (cap - simdjson::SIMDJSON_PADDING - len_ < opt_.chunk_bytes && cap < max_cap) {
      const size_t grown = std::min(
          max_cap, std::max(2 * cap, len_ + opt_.chunk_bytes + simdjson::SIMDJSON_PADDING));
      std::unique_ptr<char[]> bigger(new char[grown]);
      std::memcpy(bigger.get(), buf_.get(), len_);
      buf_ = std::move(bigger);
      cap = grown;
    }
    size_t room = cap - simdjson::SIMDJSON_PADDING - len_;
    if (opt_.progress) RETURN_IF_ERROR(opt_.progress(out_->json_bytes));
    ASSIGN_OR_RETURN(size_t n, src.Read(buf_.get() + len_, std::min(room, opt_.chunk_bytes)));
    len_ += n;
    out_->json_bytes += n;
    const bool eof = n == 0;
    RETURN_IF_ERROR(Scan(eof));
    RETURN_IF_ERROR(FlushBatch());
    if (eof) break;
  }
  return Status::Ok();
}

Status KinetoParser::Scan(bool eof) {
  while (pos_ < len_) {
    if (block_mode_) {
      RETURN_IF_ERROR(ScanEventBlocks(eof));
      if (block_mode_) break;  // needs the next chunk
      continue;
    }
    if (in_string_) {
      ScanString();
      continue;
    }
    const char c = buf_[pos_];
    if (IsSpace(c)) {
      if (expect_ == Expect::kInScalar && stack_.size() == 1)
        expect_ = Expect::kCommaOrEnd;  // a number ends
      ++pos_;
      continue;
    }
    if (root_ == Root::kDone)
      return Error(pos_, "unexpected data after the end of the JSON document");
    if (root_ == Root::kNone) {
      RETURN_IF_ERROR(OnRootStart(c));
    } else if (stack_.size() == 1 && root_ == Root::kObject) {
      RETURN_IF_ERROR(OnRootObjectByte(c));
    } else {
      RETURN_IF_ERROR(OnNestedRootValueByte(c));
    }
  }
  (void)eof;
  return Status::Ok();
}

void KinetoParser::ScanString() {
  char* const b = buf_.get();
  if (escape_pending_) {
    escape_pending_ = false;
    ++pos_;
    return;
  }
  const char* p = FindQuoteOrBackslash(b + pos_, b + len_);
  if (p == b + len_) {
    pos_ = len_;
    return;
  }
  if (*p == '\\') {
    if (p + 1 < b + len_) {
      pos_ = static_cast<size_t>(p - b) + 2;
    } else {
      pos_ = len_;
      escape_pending_ = true;
    }
    return;
  }
  // Closing quote.
  size_t end = static_cast<size_t>(p - b);
  pos_ = end + 1;
  in_string_ = false;
  if (key_string_) {
    key_string_ = false;
    key_.assign(b + string_start_, end - string_start_);
    expect_ = Expect::kColon;
  } else if (stack_.size() == 1 && root_ == Root::kObject && expect_ == Expect::kValue) {
    expect_ = Expect::kCommaOrEnd;  // a string value at the root
  }
}

Status KinetoParser::OnRootStart(char c) {
  const char* const b = buf_.get();
  if (pos_ == 0 && discarded_ == 0 && len_ >= 3 && static_cast<unsigned char>(b[0]) == 0xEF &&
      static_cast<unsigned char>(b[1]) == 0xBB && static_cast<unsigned char>(b[2]) == 0xBF) {
    pos_ = 3;  // UTF-8 byte order mark
    return Status::Ok();
  }
  if (c == '{') {
    root_ = Root::kObject;
    stack_.push_back('{');
    expect_ = Expect::kKey;
  } else if (c == '[') {
    root_ = Root::kArray;  // the Trace Event Format's "JSON Array Format"
    stack_.push_back('[');
    events_depth_ = 1;
    saw_trace_events_ = true;
    EnterBlockMode(pos_ + 1);
  } else {
    return Error(pos_, "expected a JSON object with \"traceEvents\" (or an array of events)");
  }
  ++pos_;
  return Status::Ok();
}

Status KinetoParser::OnRootObjectByte(char c) {
  switch (expect_) {
    case Expect::kKey:
      if (c == '"') {
        in_string_ = true;
        key_string_ = true;
        string_start_ = pos_ + 1;
      } else if (c == '}') {
        stack_.pop_back();
        root_ = Root::kDone;
      } else {
        return Error(pos_, "expected a key in the top-level object");
      }
      break;
    case Expect::kColon:
      if (c != ':') return Error(pos_, fmt::format("expected ':' after \"{}\"", key_));
      expect_ = Expect::kValue;
      break;
    case Expect::kValue:
      return OnRootValueStart(c);  // advances pos_
    case Expect::kInScalar:
      if (c == ',' || c == '}') {
        expect_ = Expect::kCommaOrEnd;
        return Status::Ok();  // the same byte again, as a separator
      }
      if (c == '"' || c == '{' || c == '[' || c == ':' || c == ']') {
        return Error(pos_, fmt::format("expected ',' or '}}' after the value of \"{}\"", key_));
      }
      break;
    case Expect::kCommaOrEnd:
      if (c == ',') {
        expect_ = Expect::kKey;
      } else if (c == '}') {
        stack_.pop_back();
        root_ = Root::kDone;
      } else {
        return Error(pos_, "expected ',' or '}' in the top-level object");
      }
      break;
  }
  ++pos_;
  return Status::Ok();
}

Status KinetoParser::OnNestedRootValueByte(char c) {
  if (c == '"') {
    in_string_ = true;
    string_start_ = pos_ + 1;
  } else if (c == '{' || c == '[') {
    if (stack_.size() >= 256) return Error(pos_, "nested deeper than 256 levels");
    stack_.push_back(c);
  } else if (c == '}' || c == ']') {
    if (stack_.back() != (c == '}' ? '{' : '['))
      return Error(pos_, fmt::format("unexpected '{}'", c));
    stack_.pop_back();
    if (stack_.size() == 1) {
      expect_ = Expect::kCommaOrEnd;
      if (capture_start_ != SIZE_MAX) {
        std::string_view json(buf_.get() + capture_start_, pos_ + 1 - capture_start_);
        capture_start_ = SIZE_MAX;
        RETURN_IF_ERROR(capture_key_ == "deviceProperties" ? ParseDeviceProperties(json)
                                                           : ParseDistributedInfo(json));
      }
    }
  }
  ++pos_;
  return Status::Ok();
}

Status KinetoParser::CheckGap(const char* block, size_t block_pos, size_t at, bool closing) {
  const char* b = buf_.get();
  int commas = 0;
  for (size_t i = gap_start_; i < at; ++i) {
    // Bytes of the current block may sit in a padded copy at the end of the input.
    const char c = i >= block_pos ? block[i - block_pos] : b[i];
    if (IsSpace(c)) continue;
    if (c != ',') return Error(i, fmt::format("traceEvents[{}] is not an object", events_seen_));
    if (++commas > 1 || !after_event_) return Error(i, "unexpected ',' in traceEvents");
  }
  if (closing && commas > 0) return Error(at, "trailing ',' at the end of traceEvents");
  if (!closing && after_event_ && commas == 0) return Error(at, "missing ',' between trace events");
  return Status::Ok();
}

Status KinetoParser::ScanEventBlocks(bool eof) {
  char* const b = buf_.get();
  char tail[64];
  while (true) {
    const size_t avail = len_ - pos_;
    const char* block = b + pos_;
    if (avail < 64) {
      if (!eof || avail == 0) return Status::Ok();  // wait for the next chunk
      std::memcpy(tail, b + pos_, avail);
      std::memset(tail + avail, ' ', 64 - avail);
      block = tail;
    }
    const size_t block_pos = pos_;
    BlockMasks m = ClassifyBlock(block);
    // Most blocks of a trace hold no backslash, and many no quote: both masks are then known
    // without the bit arithmetic (EscapedChars of no backslash and no carry is 0, PrefixXor of 0
    // is 0).
    const uint64_t quotes = m.backslash == 0 && prev_escape_ == 0
                                ? m.quote
                                : m.quote & ~EscapedChars(m.backslash, &prev_escape_);
    const uint64_t in_string = (quotes == 0 ? 0 : PrefixXor(quotes)) ^ prev_in_string_;
    prev_in_string_ = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    uint64_t brackets = (m.open | m.close) & ~in_string;
    while (brackets != 0) {
      const int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      const size_t at = block_pos + static_cast<size_t>(i);
      const char c = block[i];
      if (c == '{' || c == '[') {
        if (stack_.size() == events_depth_) {
          if (c != '{')
            return Error(at, fmt::format("traceEvents[{}] is not an object", events_seen_));
          RETURN_IF_ERROR(CheckGap(block, block_pos, at, /*closing=*/false));
          event_start_ = at;
        }
        if (stack_.size() >= 256) return Error(at, "nested deeper than 256 levels");
        stack_.push_back(c);
        continue;
      }
      if (stack_.back() != (c == '}' ? '{' : '['))
        return Error(at, fmt::format("unexpected '{}'", c));
      if (stack_.size() == events_depth_) {  // the end of traceEvents
        RETURN_IF_ERROR(CheckGap(block, block_pos, at, /*closing=*/true));
        // A batch never spans two arrays (a file may hold "traceEvents" twice).
        RETURN_IF_ERROR(FlushBatch());
        stack_.pop_back();
        events_depth_ = 0;
        block_mode_ = false;
        pos_ = at + 1;
        if (stack_.empty()) {
          root_ = Root::kDone;
        } else {
          expect_ = Expect::kCommaOrEnd;
        }
        return Status::Ok();
      }
      stack_.pop_back();
      if (stack_.size() == events_depth_) {
        RETURN_IF_ERROR(OnEventComplete(event_start_, at + 1));
        event_start_ = SIZE_MAX;
        gap_start_ = at + 1;
        after_event_ = true;
      }
    }
    pos_ = block == tail ? len_ : pos_ + 64;
  }
}

Status KinetoParser::OnRootValueStart(char c) {
  const bool is_events = key_ == "traceEvents";
  if (is_events && c != '[') return Error(pos_, "\"traceEvents\" is not an array");
  if (c == '{' || c == '[') {
    stack_.push_back(c);
    if (is_events) {
      events_depth_ = stack_.size();
      saw_trace_events_ = true;
      EnterBlockMode(pos_ + 1);
    } else if ((key_ == "distributedInfo" && c == '{') ||
               (key_ == "deviceProperties" && c == '[')) {
      capture_start_ = pos_;
      capture_key_ = key_;
    }
    expect_ = Expect::kCommaOrEnd;  // reached again when the value closes
  } else if (c == '"') {
    in_string_ = true;
    string_start_ = pos_ + 1;
  } else if (c == ',' || c == '}' || c == ':') {
    return Error(pos_, fmt::format("missing value for \"{}\"", key_));
  } else {
    expect_ = Expect::kInScalar;  // number, true, false, null: simdjson is not asked to check these
  }
  ++pos_;
  return Status::Ok();
}

Status KinetoParser::OnEventComplete(size_t begin, size_t end) {
  if (batch_begin_ == SIZE_MAX) batch_begin_ = begin;
  batch_end_ = end;
  batch_starts_.push_back(begin);
  ++events_seen_;
  if (batch_end_ - batch_begin_ >= opt_.batch_bytes) return FlushBatch();
  return Status::Ok();
}

Status KinetoParser::FlushBatch() {
  if (batch_begin_ == SIZE_MAX) return Status::Ok();
  const size_t n = batch_end_ - batch_begin_;
  const size_t need = n + 2 + simdjson::SIMDJSON_PADDING;
  EventBatch& b = batch_;
  if (b.json.size() < need) b.json.resize(need);
  b.json[0] = '[';
  std::memcpy(b.json.data() + 1, buf_.get() + batch_begin_, n);
  b.json[n + 1] = ']';
  std::memset(b.json.data() + n + 2, 0, simdjson::SIMDJSON_PADDING);
  b.size = n + 2;
  b.first_index = events_seen_ - static_cast<int64_t>(batch_starts_.size());
  b.base = discarded_ + batch_begin_;
  b.starts.resize(batch_starts_.size());
  for (size_t k = 0; k < batch_starts_.size(); ++k) b.starts[k] = discarded_ + batch_starts_[k];
  batch_begin_ = SIZE_MAX;
  batch_end_ = 0;
  batch_starts_.clear();
  if (worker_ != nullptr) return worker_->Submit(b);
  return ParseBatch(b);
}

Status KinetoParser::ParseBatch(const EventBatch& b) {
  auto at = [&b](size_t k) { return k < b.starts.size() ? b.starts[k] : b.base; };
  auto fail = [&](size_t k, simdjson::error_code e) {
    return InvalidArgument(fmt::format("{}: invalid JSON in traceEvents[{}] at byte {}: {}", label_,
                                       b.first_index + static_cast<int64_t>(k), at(k),
                                       simdjson::error_message(e)));
  };
  od::document doc;
  if (auto e = parser_.iterate(simdjson::padded_string_view(b.json.data(), b.size, b.json.size()))
                   .get(doc)) {
    return fail(0, e);
  }
  od::array events;
  if (auto e = doc.get_array().get(events)) return fail(0, e);
  size_t k = 0;
  for (auto element : events) {
    od::value v;
    if (auto e = element.get(v)) return fail(k, e);
    od::object obj;
    if (auto e = v.get_object().get(obj)) return fail(k, e);
    Status st = HandleEvent(obj, b.first_index + static_cast<int64_t>(k));
    if (!st.ok()) {
      return InvalidArgument(fmt::format("{}: invalid JSON in traceEvents[{}] at byte {}: {}",
                                         label_, b.first_index + static_cast<int64_t>(k), at(k),
                                         st.message()));
    }
    ++k;
  }
  if (k != b.starts.size()) return fail(k, simdjson::TAPE_ERROR);
  return ChargeKept(b.base + b.size - 2);
}

Status KinetoParser::HandleEvent(od::object obj, int64_t index) {
  EventFields f;
  for (auto field : obj) {
    // Keys are compared raw (Kineto never escapes them): no unescaping, no copy.
    od::raw_json_string key;
    if (auto e = field.key().get(key)) return InvalidArgument(simdjson::error_message(e));
    od::value v;
    if (auto e = field.value().get(v)) return InvalidArgument(simdjson::error_message(e));
    switch (key.raw()[0]) {
      case 'c':
        if (key.unsafe_is_equal("cat")) {
          if (v.get_string().get(f.cat) != simdjson::SUCCESS)
            return InvalidArgument("\"cat\" is not a string");
          f.has_cat = true;
        }
        break;
      case 'n':
        if (key.unsafe_is_equal("name")) ReadEventName(v, index, &f);
        break;
      case 't':
        if (key.unsafe_is_equal("ts")) {
          f.has_ts = GetDouble(v, &f.ts);
        } else if (key.unsafe_is_equal("tid")) {
          GetInt(v, &f.tid);
        }
        break;
      case 'd':
        if (key.unsafe_is_equal("dur")) f.has_dur = GetDouble(v, &f.dur);
        break;
      case 'a':
        if (key.unsafe_is_equal("args")) {
          if (auto e = ReadEventArgs(v, &f))
            return InvalidArgument(fmt::format("args: {}", simdjson::error_message(e)));
        }
        break;
      default:
        break;
    }
    if (f.done_early) break;
  }
  ++out_->events_total;
  if (!f.done_early) KeepEvent(&f, index);
  return Status::Ok();
}

void KinetoParser::KeepEvent(EventFields* f, int64_t index) {
  // HTA keeps complete events with a category (hta/common/trace_parser.py _compress_df drops rows
  // without "dur" or "cat", and the "Trace" category).
  if (!f->has_dur || !f->has_cat || !f->has_ts || f->cat == "Trace") return;
  if (index == 0 && f->cat != "gpu_user_annotation") {
    out_->first_event_kept = true;
    out_->first_event_ts_us = f->ts;
  }
  if (!std::isfinite(f->ts) || !std::isfinite(f->dur) || f->dur < 0) return;
  if (!f->has_name) f->name = "";
  if (f->calib_op) {
    KeepShapedOp(f);
    return;
  }
  if (f->CpuOnly() && KeepPipelineOp(*f)) return;
  if (f->args_done && f->args.has_stream && f->args.stream != -1 &&
      f->cat != "gpu_user_annotation") {
    KeepGpuEvent(f);
    return;
  }
  KeepCpuEvent(*f);
}

void KinetoParser::KeepShapedOp(EventFields* f) {
  if (!f->calib_dims) {
    ++out_->calib_ops_without_shapes;
    return;
  }
  f->shaped.name = out_->names.Intern(f->name);
  f->shaped.tid = f->tid;
  f->shaped.ts_us = f->ts;
  f->shaped.dur_us = f->dur;
  out_->shaped_ops.push_back(std::move(f->shaped));
}

bool KinetoParser::KeepPipelineOp(const EventFields& f) {
  // Kept for pipeline recovery (trace/pipeline_detect.h).
  if (StartsWith(f.name, "autograd::engine::evaluate_function")) {
    out_->autograd_ops.push_back({f.ts, f.dur, f.tid});
    return true;
  }
  if (f.name == "record_param_comms") {
    const bool send = f.args.meta.name == "send";
    if (f.args_done && (send || f.args.meta.name == "recv"))
      out_->p2p_calls.push_back({f.ts, f.tid, send, send ? f.args.meta.dst : f.args.meta.src});
    return true;
  }
  return false;
}

void KinetoParser::KeepGpuEvent(EventFields* f) {
  trace::GpuEvent g;
  g.ts_us = f->ts;
  g.dur_us = f->dur;
  g.stream = f->args.stream;
  g.correlation = f->args.correlation;
  g.name = out_->names.Intern(f->name);
  g.cat = f->cat == "kernel"       ? trace::GpuCat::kKernel
          : f->cat == "gpu_memcpy" ? trace::GpuCat::kMemcpy
          : f->cat == "gpu_memset" ? trace::GpuCat::kMemset
                                   : trace::GpuCat::kOther;
  if (f->args.has_collective) {
    g.collective = static_cast<int32_t>(out_->collectives.size());
    out_->collectives.push_back(std::move(f->args.meta));
  }
  out_->gpu.push_back(g);
}

void KinetoParser::KeepCpuEvent(const EventFields& f) {
  if (f.args_done && f.args.correlation != -1)
    out_->launches.push_back({f.args.correlation, f.ts, f.tid, f.args.external_id});
  if (StartsWith(f.name, "ProfilerStep")) {
    out_->steps.push_back(
        {f.ts, f.dur, out_->names.Intern(f.name), f.tid, ProfilerStepNumber(f.name)});
  } else if (StartsWith(f.name, "PP:")) {
    out_->pp.push_back({f.ts, f.dur, out_->names.Intern(f.name), f.tid, -1});
  }
}

// [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912, "computeMajor": 9,
// ...}, ...]: the fields of trace::DeviceProperties; elements that are not objects and fields of
// another type are skipped; at most trace::kMaxDeviceProperties elements are kept.
Status KinetoParser::ParseDeviceProperties(std::string_view json) {
  simdjson::padded_string padded(json.data(), json.size());
  od::parser parser;
  od::document doc;
  auto bad = [&](simdjson::error_code e) {
    return InvalidArgument(
        fmt::format("{}: invalid deviceProperties: {}", label_, simdjson::error_message(e)));
  };
  if (auto e = parser.iterate(padded).get(doc)) return bad(e);
  od::array devices;
  if (auto e = doc.get_array().get(devices)) return bad(e);
  for (auto d : devices) {
    od::value dv;
    if (auto e = d.get(dv)) return bad(e);
    od::object o;
    if (dv.get_object().get(o)) continue;
    trace::DeviceProperties p;
    for (auto field : o) {
      std::string_view key;
      od::value v;
      if (auto e = field.unescaped_key().get(key)) return bad(e);
      if (auto e = field.value().get(v)) return bad(e);
      if (key == "id") {
        GetInt(v, &p.id);
      } else if (key == "name") {
        if (GetString(v, &p.name) && p.name.size() > trace::kMaxDeviceNameBytes)
          p.name.resize(trace::kMaxDeviceNameBytes);
      } else if (key == "totalGlobalMem") {
        GetInt(v, &p.total_global_mem_bytes);
      } else if (key == "computeMajor") {
        GetInt(v, &p.compute_major);
      } else if (key == "computeMinor") {
        GetInt(v, &p.compute_minor);
      }
    }
    if (out_->devices.size() < trace::kMaxDeviceProperties) out_->devices.push_back(std::move(p));
  }
  return Status::Ok();
}

Status KinetoParser::ParseDistributedInfo(std::string_view json) {
  simdjson::padded_string padded(json.data(), json.size());
  od::parser parser;
  od::document doc;
  auto bad = [&](simdjson::error_code e) {
    return InvalidArgument(
        fmt::format("{}: invalid distributedInfo: {}", label_, simdjson::error_message(e)));
  };
  if (auto e = parser.iterate(padded).get(doc)) return bad(e);
  od::object obj;
  if (auto e = doc.get_object().get(obj)) return bad(e);
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return bad(e);
    od::value v;
    if (auto e = field.value().get(v)) return bad(e);
    if (key == "rank") {
      GetInt(v, &out_->rank);
    } else if (key == "world_size") {
      GetInt(v, &out_->world_size);
    } else if (key == "backend") {
      GetString(v, &out_->backend);
    } else if (key == "pg_config") {
      od::array groups;
      if (v.get_array().get(groups)) continue;
      for (auto g : groups) {
        od::object go;
        if (g.get_object().get(go)) continue;
        trace::ProcessGroup pg;
        for (auto gf : go) {
          std::string_view gk;
          od::value gv;
          if (gf.unescaped_key().get(gk) || gf.value().get(gv)) break;
          if (gk == "pg_name") {
            if (!GetString(gv, &pg.name)) {
              int64_t n;
              if (GetInt(gv, &n)) pg.name = std::to_string(n);
            }
          } else if (gk == "pg_desc") {
            GetString(gv, &pg.desc);
          } else if (gk == "pg_size") {
            GetInt(gv, &pg.size);
          } else if (gk == "ranks") {
            od::array ranks;
            if (gv.get_array().get(ranks)) continue;
            for (auto r : ranks) {
              int64_t x;
              if (!r.error() && GetInt(r.value_unsafe(), &x) && pg.ranks.size() < 1'000'000)
                pg.ranks.push_back(x);
            }
          }
        }
        if (out_->process_groups.size() < 100'000) out_->process_groups.push_back(std::move(pg));
      }
    }
  }
  return Status::Ok();
}

// What ReadFrom knows of the input's size before reading it, for the JSON size hint.
struct InputSize {
  uint64_t bytes = 0;        // the input's size; 0 when unknown (a pipe)
  bool has_trailer = false;  // `trailer` holds the input's last 4 bytes
  uint32_t trailer = 0;      // little-endian, as gzip writes ISIZE
};

// Deflate cannot expand its input more than 1032 to 1 (zlib's technical details,
// zlib.net/zlib_tech.html, "Maximum compression factor"): a trailer that claims more lies.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The bytes of JSON the input is expected to hold: its size, or for gzip the uncompressed length
// its trailer states (ISIZE, RFC 1952 section 2.3.1: the last member's length mod 2^32) when that
// is not below the compressed size (it wraps past 4 GiB) and not beyond what deflate can expand
// it to. A lie is bounded by this and by EventsToReserve: a truncated or damaged file of a few
// kilobytes, whose last four bytes are anything, reserves at most a few megabytes, not the whole
// budget's room (which a test reading every prefix of a gzip trace paid for each prefix).
uint64_t JsonSizeHint(const InputSize& in, bool gzip) {
  if (!gzip) return in.bytes;
  if (in.has_trailer && in.trailer >= in.bytes)
    return std::min<uint64_t>(in.trailer, in.bytes * kMaxDeflateRatio);
  return in.bytes;
}

uint32_t LittleEndian32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

StatusOr<trace::RankTrace> ReadFrom(Source& raw, const std::string& label,
                                    const KinetoReadOptions& options, const InputSize& size) {
  // Probe the first two bytes for the gzip magic number.
  char probe[2];
  size_t got = 0;
  while (got < 2) {
    ASSIGN_OR_RETURN(size_t n, raw.Read(probe + got, 2 - got));
    if (n == 0) break;
    got += n;
  }
  PrefixSource prefixed(std::string(probe, got), &raw);
  trace::RankTrace out;
  out.path = label;
  KinetoParser parser(label, options, &out);
  Status st;
  const bool gzip = got == 2 && static_cast<unsigned char>(probe[0]) == 0x1f &&
                    static_cast<unsigned char>(probe[1]) == 0x8b;
  parser.set_json_size_hint(JsonSizeHint(size, gzip));
  if (gzip) {
    GzipSource gz(&prefixed, label);
    st = parser.Run(gz);
  } else {
    st = parser.Run(prefixed);
  }
  // A trace refused for its content is dropped: its memory is free for the other files. One
  // beyond the budget keeps its charge, so the files after it are refused too.
  if (!st.ok() && st.code() != StatusCode::kResourceExhausted) parser.Refund();
  RETURN_IF_ERROR(st);
  return out;
}

}  // namespace

size_t EventsToReserve(uint64_t json_bytes, const TraceMemoryBudget& budget) {
  const uint64_t used = budget.used_bytes(), limit = budget.limit_bytes();
  const uint64_t room = used < limit ? limit - used : 0;
  const uint64_t by_budget = room / (kAnalysisBytesPerGpuEvent + kAnalysisBytesPerLaunch);
  return static_cast<size_t>(std::min(json_bytes / kJsonBytesPerReservedEvent, by_budget));
}

StatusOr<trace::RankTrace> ReadKinetoTraceFile(const std::string& path,
                                               const KinetoReadOptions& options) {
  if (path == "-") {  // standard input: streamed as a file is, its size counted while read
    FileSource src(stdin, "- (stdin)", /*owned=*/false);
    ASSIGN_OR_RETURN(trace::RankTrace t, ReadFrom(src, path, options, InputSize{}));
    t.file_bytes = src.bytes();
    return t;
  }
  RETURN_IF_ERROR(CheckRegularFile(path));  // a FIFO would block the read (issue 26)
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return NotFound(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  InputSize size;
  struct stat sb {};
  if (fstat(fileno(f), &sb) == 0 && sb.st_size > 0) {
    size.bytes = static_cast<uint64_t>(sb.st_size);
    unsigned char last[4];
    // pread leaves the stream's position (nothing has been read through it yet) alone.
    if (sb.st_size >= 4 && pread(fileno(f), last, 4, sb.st_size - 4) == 4) {
      size.has_trailer = true;
      size.trailer = LittleEndian32(last);
    }
  }
  FileSource src(f, path);
  ASSIGN_OR_RETURN(trace::RankTrace t, ReadFrom(src, path, options, size));
  std::FILE* g = std::fopen(path.c_str(), "rb");
  if (g != nullptr) {
    if (std::fseek(g, 0, SEEK_END) == 0)
      t.file_bytes = static_cast<uint64_t>(std::max(0L, std::ftell(g)));
    std::fclose(g);
  }
  return t;
}

StatusOr<trace::RankTrace> ReadKinetoTraceBytes(std::string_view bytes, const std::string& label,
                                                const KinetoReadOptions& options) {
  MemorySource src(bytes);
  InputSize size{bytes.size(), bytes.size() >= 4, 0};
  if (size.has_trailer)
    size.trailer =
        LittleEndian32(reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size() - 4);
  ASSIGN_OR_RETURN(trace::RankTrace t, ReadFrom(src, label, options, size));
  t.file_bytes = bytes.size();
  return t;
}

}  // namespace infralens::trace
