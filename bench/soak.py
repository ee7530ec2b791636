#!/usr/bin/env python3
"""A soak test of `infralens serve` under the attacks of issue 26, on loopback only.

Starts the server (`BIN serve --port 0`), then runs one phase per attack, each for --seconds,
while a probe (a process of its own) asks for a light request (GET /api/presets on a fresh
connection) every 20 ms and records its latency, and why it failed when it did; the server's RSS
is read from /proc before and after each phase. Phases:

  baseline      the probe alone
  heavy64       64 clients asking, back to back, for a GPT-1T plan search on 1,024 GPUs
  chunk-flood   8 clients streaming chunked uploads made of 1 KiB chunk extensions per data byte
  idle1000      1,000 sockets that connect and say nothing (reopened when the server closes one)
  uploads       sequential gzip trace uploads of --upload-kernels kernels each (POST
                /api/trace/analyze); RSS is read 2 s after the last one

Every loop is bounded by its phase's deadline and the whole run by --max-seconds; it contacts
127.0.0.1 only and stops the server at the end. Prints a markdown table (docs/workbench.md,
"Under abuse"). Not a test: the figures depend on the machine.

  python3 bench/soak.py --bin build/infralens [--seconds 15] [--phases heavy64,idle1000]
"""
import argparse
import gzip
import io
import json
import multiprocessing
import os
import resource
import socket
import subprocess
import sys
import threading
import time

HOST = "127.0.0.1"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def request(port, raw, timeout=30.0, why=None):
    """Sends raw bytes on a fresh connection; returns (status, seconds) or (0, seconds). When
    `why` is a dict, a failure is counted in it by kind (the exception's name, or "no answer"
    when the server closed without one)."""
    start = time.monotonic()
    try:
        with socket.create_connection((HOST, port), timeout=timeout) as s:
            s.sendall(raw)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
            status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0
            if status == 0 and why is not None:
                why["no answer"] = why.get("no answer", 0) + 1
            return status, time.monotonic() - start
    except (OSError, ValueError, IndexError) as e:
        if why is not None:
            why[type(e).__name__] = why.get(type(e).__name__, 0) + 1
        return 0, time.monotonic() - start


def get(port, target):
    return (f"GET {target} HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n\r\n").encode()


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def run_probe(port, deadline, out):
    latencies, failures, why = [], 0, {}
    while time.monotonic() < deadline:
        status, secs = request(port, get(port, "/api/presets"), timeout=30, why=why)
        if status == 200:
            latencies.append(secs)
        else:
            failures += 1
            if status != 0:
                why[status] = why.get(status, 0) + 1
        time.sleep(0.02)
    out.put((latencies, failures, why))


class Probe:
    """The light client, in a process of its own: the attacks run as threads of this one and share
    its GIL, and a probe waiting for the GIL measures the soak's Python, not the server (a browser
    is another process too). time.monotonic is the same clock in both processes."""

    def __init__(self, port, deadline):
        ctx = multiprocessing.get_context("fork")
        self._out = ctx.Queue()
        self._proc = ctx.Process(target=run_probe, args=(port, deadline, self._out), daemon=True)
        self.latencies, self.failures, self.why = [], 0, {}

    def start(self):
        self._proc.start()

    def join(self):
        self.latencies, self.failures, self.why = self._out.get()
        self._proc.join()


def heavy_client(port, deadline, counts, lock):
    target = "/api/plan?model=gpt-1t&gpus=1024&global_batch=1536"
    while time.monotonic() < deadline:
        status, _ = request(port, get(port, target), timeout=max(1, deadline - time.monotonic()))
        with lock:
            counts[status] = counts.get(status, 0) + 1
        if status == 503:
            time.sleep(0.1)  # a client that honours "at once" but not Retry-After's seconds


def chunk_flooder(port, deadline, counts, lock):
    head = (f"POST /api/trace/analyze HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    piece = b"1;" + b"x" * 1000 + b"\r\nx\r\n"
    block = piece * 64
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=5) as s:
                s.sendall(head)
                while time.monotonic() < deadline:
                    s.sendall(block)
        except OSError:
            pass
        with lock:
            counts["reconnects"] = counts.get("reconnects", 0) + 1


def idle_holder(port, deadline, n, counts, lock):
    socks = []
    while time.monotonic() < deadline:
        while len(socks) < n and time.monotonic() < deadline:
            try:
                s = socket.socket()
                s.setblocking(False)
                s.connect_ex((HOST, port))
                socks.append(s)
            except OSError:
                break
        # Drop the sockets the server closed (readable with EOF) and open new ones.
        alive = []
        for s in socks:
            try:
                if s.recv(1) == b"":
                    s.close()
                    with lock:
                        counts["evicted"] = counts.get("evicted", 0) + 1
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        socks = alive
        time.sleep(0.2)
    for s in socks:
        s.close()


def make_trace(kernels):
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1) as z:
        z.write(b'{"traceEvents":[')
        batch = []
        for i in range(kernels):
            batch.append(
                '{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn_%d","pid":0,"tid":7,'
                '"ts":%d,"dur":3,"args":{"stream":7,"correlation":%d}}' % (i % 97, 10 * i, i))
            if len(batch) == 10000:
                z.write((("," if i >= 10000 else "") + ",".join(batch)).encode())
                batch = []
        if batch:
            z.write((("," if kernels > len(batch) else "") + ",".join(batch)).encode())
        z.write(b"]}")
    return out.getvalue()


def upload(port, trace, timeout):
    body = (b"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"rank0.json.gz\"\r\n"
            b"Content-Type: application/gzip\r\n\r\n" + trace + b"\r\n--x--\r\n")
    raw = (f"POST /api/trace/analyze HTTP/1.1\r\nHost: {HOST}:{port}\r\nConnection: close\r\n"
           f"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    return request(port, raw, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--phases", default="baseline,heavy64,chunk-flood,idle1000,uploads")
    ap.add_argument("--upload-kernels", type=int, default=1_000_000)
    ap.add_argument("--uploads", type=int, default=3)  # as in docs/workbench.md
    ap.add_argument("--max-seconds", type=float, default=600)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    end_of_run = time.monotonic() + args.max_seconds

    server = subprocess.Popen([args.bin, "serve", "--host", HOST, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = server.stdout.readline().strip()
        port = int(url.rsplit(":", 1)[1].strip("/"))
        # The server computes its scenario list at start; let it finish before measuring.
        for _ in range(120):
            if request(port, get(port, "/api/scenarios"), timeout=60)[0] == 200:
                break
            time.sleep(0.5)
        rows = []
        for phase in args.phases.split(","):
            if time.monotonic() >= end_of_run:
                break
            seconds = min(args.seconds, end_of_run - time.monotonic())
            rss_before = rss_mib(server.pid)
            deadline = time.monotonic() + seconds
            counts, lock, workers = {}, threading.Lock(), []
            if phase == "heavy64":
                workers = [threading.Thread(target=heavy_client, args=(port, deadline, counts, lock), daemon=True)
                           for _ in range(64)]
            elif phase == "chunk-flood":
                workers = [threading.Thread(target=chunk_flooder, args=(port, deadline, counts, lock), daemon=True)
                           for _ in range(8)]
            elif phase == "idle1000":
                workers = [threading.Thread(target=idle_holder, args=(port, deadline, 250, counts, lock), daemon=True)
                           for _ in range(4)]
            elif phase == "uploads":
                trace = make_trace(args.upload_kernels)
                counts["upload_mib"] = round(len(trace) / 2**20, 1)

                def uploader():
                    peak = 0.0
                    for _ in range(args.uploads):
                        if time.monotonic() >= end_of_run:
                            break
                        done = threading.Event()

                        def watch():
                            nonlocal peak
                            while not done.is_set():
                                peak = max(peak, rss_mib(server.pid))
                                time.sleep(0.05)
                        w = threading.Thread(target=watch, daemon=True)
                        w.start()
                        status, secs = upload(port, trace, timeout=120)
                        done.set()
                        w.join()
                        with lock:
                            counts.setdefault("statuses", []).append(status)
                            counts.setdefault("upload_s", []).append(round(secs, 1))
                    counts["peak_mib"] = round(peak)
                workers = [threading.Thread(target=uploader, daemon=True)]
                deadline = time.monotonic() + 600  # the uploads end the phase, not the clock
            probe = Probe(port, deadline if phase != "uploads" else time.monotonic() + seconds)
            probe.start()  # first: a fork while the attack's threads run would copy them mid-step
            for w in workers:
                w.start()
            for w in workers:
                w.join(timeout=max(0, end_of_run - time.monotonic()))
            probe.join()
            if phase == "uploads":
                time.sleep(2)
            rss_after = rss_mib(server.pid)
            lat = probe.latencies
            row = {
                "phase": phase,
                "probes": len(lat),
                "failed": probe.failures,
                "p50_ms": round(1000 * percentile(lat, 50), 1),
                "p99_ms": round(1000 * percentile(lat, 99), 1),
                "max_ms": round(1000 * max(lat), 1) if lat else float("nan"),
                "rss_before_mib": round(rss_before),
                "rss_after_mib": round(rss_after),
                "attack": {str(k): v for k, v in counts.items()},
            }
            if probe.why:
                row["attack"]["probe failures"] = {str(k): v for k, v in probe.why.items()}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
        print("| phase | light probes | failed | p50 ms | p99 ms | max ms | RSS before MiB | RSS after MiB | attack |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in rows:
            attack = ", ".join(f"{k}: {v}" for k, v in r["attack"].items())
            print(f"| {r['phase']} | {r['probes']} | {r['failed']} | {r['p50_ms']} | {r['p99_ms']} | "
                  f"{r['max_ms']} | {r['rss_before_mib']} | {r['rss_after_mib']} | {attack} |")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
