#!/usr/bin/env python3
"""Converts XLA's measured matmul throughput table (a text-format protobuf inside a C++ header) into the CSV
that gputwin's GemmTable reads (models/compute/include/gputwin/models/gemm_table.hpp).

Usage:
  python3 models/compute/data/xla_matmul_table_to_csv.py matmul_interpolator_data.h > models/compute/data/h100_gemm_table.csv
where the header is tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h at
commit 372d578bb861cc5804e56d37d93aec931a59762c (Apache-2.0). Options: --device sm_90 --dtype bf16xbf16->bf16.
Rows are sorted by batch, m, n, k; the FLOP/s values are copied as written there.
"""
import argparse
import re
import sys

HEADER = """# Measured bf16 GEMM throughput of an NVIDIA H100 (sm_90): achieved FLOP/s of b independent m x n x k
# products (2 b m n k FLOPs), b in {1, 2, 4}, m, n, k in {256, 512, 1024, 2048, 4096}.
# Source: XLA's matmul interpolator table, tensorflow/tensorflow
#   third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h, commit
#   372d578bb861cc5804e56d37d93aec931a59762c, key "sm_90", flops key "bf16xbf16->bf16".
# Copyright 2025 The OpenXLA Authors. Licensed under the Apache License, Version 2.0
#   (http://www.apache.org/licenses/LICENSE-2.0); values copied unchanged, only the layout differs.
# Regenerate: python3 models/compute/data/xla_matmul_table_to_csv.py matmul_interpolator_data.h > this file
#   (each value is 2 b m n k / t for a whole-nanosecond time t, which checks the copy).
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("header")
    parser.add_argument("--device", default="sm_90")
    parser.add_argument("--dtype", default="bf16xbf16->bf16")
    args = parser.parse_args()
    text = open(args.header).read()
    device_at = text.find('key: "%s"' % args.device)
    if device_at < 0:
        sys.exit("no device %s in %s" % (args.device, args.header))
    next_device = text.find("\n  entries {\n    key:", device_at + 1)
    body = text[device_at: next_device if next_device > 0 else len(text)]
    rows = []
    for entry in re.finditer(r"entries \{\s*b: (\d+)\s*m: (\d+)\s*n: (\d+)\s*k: (\d+)(.*?)\n      \}", body, re.S):
        b, m, n, k = (int(entry.group(i)) for i in range(1, 5))
        value = re.search(r'flops \{ key: "%s" value: (\d+) \}' % re.escape(args.dtype), entry.group(5))
        if value:
            rows.append((b, m, n, k, int(value.group(1))))
    rows.sort()
    sys.stdout.write(HEADER)
    print("batch,m,n,k,flops_per_s")
    for row in rows:
        print(",".join(str(v) for v in row))


if __name__ == "__main__":
    main()
