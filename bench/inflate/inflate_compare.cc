// Streaming gzip inflate, three Debian libraries side by side on one file (issue 21): zlib
// (zlib1g, what the Kineto reader links), Intel ISA-L's igzip (libisal-dev, streaming) and
// libdeflate (libdeflate-dev, whole buffer only: it needs the whole output in memory, so it cannot
// keep the reader's memory bounded; measured for reference). Input is read in 1 MiB chunks and
// inflated into a 4 MiB buffer (the reader's KinetoReadOptions::chunk_bytes), the output only
// checksummed. Prints one line per library: JSON MB per CPU second and the peak buffer memory.
// Built and run by bench/inflate_compare.sh (`make bench`).
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kIn = size_t{1} << 20, kOut = size_t{4} << 20;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

uint64_t Sum(const uint8_t* p, size_t n) {  // reads the output once, as a parser would
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

struct Result {
  uint64_t out = 0, sum = 0;
  bool ok = false;
};

Result Zlib(const std::string& path) {
  Result r;
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> in(kIn), out(kOut);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return r;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      f.read(reinterpret_cast<char*>(in.data()), kIn);
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(f.gcount());
      if (zs.avail_in == 0) break;
    }
    zs.next_out = out.data();
    zs.avail_out = kOut;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    const size_t n = kOut - zs.avail_out;
    r.out += n;
    r.sum += Sum(out.data(), n);
  }
  r.ok = rc == Z_STREAM_END;
  inflateEnd(&zs);
  return r;
}

Result Isal(const std::string& path) {
  Result r;
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> in(kIn), out(kOut);
  inflate_state st;
  isal_inflate_init(&st);
  st.crc_flag = ISAL_GZIP;  // parse the gzip header and check the CRC, as zlib does
  while (true) {
    if (st.avail_in == 0 && f) {
      f.read(reinterpret_cast<char*>(in.data()), kIn);
      st.next_in = in.data();
      st.avail_in = static_cast<uint32_t>(f.gcount());
    }
    st.next_out = out.data();
    st.avail_out = kOut;
    const int rc = isal_inflate(&st);
    if (rc != ISAL_DECOMP_OK) {
      std::fprintf(stderr, "isal_inflate: %d\n", rc);
      return r;
    }
    const size_t n = kOut - st.avail_out;
    if (n == 0 && st.avail_in == 0 && !f) break;  // input ended before the stream did
    r.out += n;
    r.sum += Sum(out.data(), n);
    if (st.block_state == ISAL_BLOCK_FINISH) {
      r.ok = true;
      break;
    }
  }
  return r;
}

Result Libdeflate(const std::string& path, size_t out_size) {
  Result r;
  std::ifstream f(path, std::ios::binary);
  f.seekg(0, std::ios::end);
  std::vector<uint8_t> in(static_cast<size_t>(f.tellg()));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(in.data()), static_cast<std::streamsize>(in.size()));
  std::vector<uint8_t> out(out_size);
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  size_t n = 0;
  r.ok = libdeflate_gzip_decompress(d, in.data(), in.size(), out.data(), out.size(), &n) ==
         LIBDEFLATE_SUCCESS;
  libdeflate_free_decompressor(d);
  r.out = n;
  r.sum = Sum(out.data(), n);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inflate_compare FILE.json.gz\n");
    return 2;
  }
  const std::string path = argv[1];
  Result want;
  for (int lib = 0; lib < 3; ++lib) {
    const char* name = lib == 0 ? "zlib" : lib == 1 ? "isa-l (igzip)" : "libdeflate (whole buffer)";
    const double t0 = CpuSeconds();
    Result r = lib == 0 ? Zlib(path) : lib == 1 ? Isal(path) : Libdeflate(path, want.out + 1);
    const double cpu = CpuSeconds() - t0;
    if (lib == 0) want = r;
    if (!r.ok || r.out != want.out || r.sum != want.sum) {
      std::fprintf(stderr, "%s: inflate failed or differs from zlib (ok %d, %llu bytes)\n", name,
                   r.ok, (unsigned long long)r.out);
      return 1;
    }
    const double mem_mb = lib == 2 ? static_cast<double>(r.out) / 1e6 : (kIn + kOut) / 1e6;
    std::printf("%-26s %8.1f MB of JSON in %.3f CPU-s: %7.0f MB/CPU-s, buffers %.0f MB\n", name,
                r.out / 1e6, cpu, r.out / 1e6 / cpu, mem_mb);
  }
  return 0;
}
