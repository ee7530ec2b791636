#!/usr/bin/env python3
"""Writes one rank's Kineto trace with N GPU kernels to stdout, for memory and speed figures of
`infralens trace analyze` beyond what `infralens trace synth` writes (it stops at 2 GB of JSON).

Each kernel is a cudaLaunchKernel on the CPU and a GEMM kernel on stream 7 linked by a
correlation id, as PyTorch's profiler writes them (the fields of `infralens trace synth`'s
output); kernels are split evenly over --steps ProfilerStep annotations.

    python3 bench/large_trace.py --kernels 12000000 | gzip -1 > /tmp/12m.json.gz
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, required=True)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    if a.kernels < a.steps or a.steps < 1:
        sys.exit("large_trace.py: --kernels must be at least --steps >= 1")
    out = sys.stdout
    out.write('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, '
              '"world_size": 1},\n  "traceEvents": [\n')
    per_step = a.kernels // a.steps
    gemm = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"
    corr = 0
    t = 1000000
    first = True
    for s in range(a.steps):
        n = per_step if s + 1 < a.steps else a.kernels - per_step * (a.steps - 1)
        out.write(('' if first else ',\n') +
                  '  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 4200, '
                  '"tid": 4200, "ts": %d.000, "dur": %d.000, "args": {}}' % (s, t - 5, n * 10 + 10))
        first = False
        lines = []
        for _ in range(n):
            corr += 1
            lines.append(
                '  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4200, '
                '"tid": 4200, "ts": %d.000, "dur": 3.000, "args": {"External id": %d, "cbid": 211, '
                '"correlation": %d}},\n'
                '  {"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %d.000, '
                '"dur": 8.000, "args": {"External id": %d, "device": 0, "stream": 7, '
                '"correlation": %d, "grid": [132, 1, 1], "block": [256, 1, 1]}}'
                % (t - 4, corr, corr, gemm, t, corr, corr))
            t += 10
            if len(lines) == 10000:
                out.write(',\n' + ',\n'.join(lines))
                lines = []
        if lines:
            out.write(',\n' + ',\n'.join(lines))
        t += 500
    out.write('\n  ],\n  "traceName": "rank0",\n  "displayTimeUnit": "ms"\n}\n')


if __name__ == "__main__":
    main()
