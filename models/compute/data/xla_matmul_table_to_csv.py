#!/usr/bin/env python3
"""Converts XLA's measured matmul throughput table (a text-format protobuf inside a C++ header) into the CSV
that gputwin's GemmTable reads (models/compute/include/gputwin/models/gemm_table.hpp).

Usage:
  python3 models/compute/data/xla_matmul_table_to_csv.py matmul_interpolator_data.h > models/compute/data/h100_gemm_table.csv
where the header is tensorflow/tensorflow third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h at
commit 372d578bb861cc5804e56d37d93aec931a59762c (Apache-2.0). Options: --device sm_90 --dtype bf16xbf16->bf16, and
--gpu / --source to name another table in the CSV's header, e.g. the B200 tables of openxla/xla
xla/service/gpu/model/matmul_interpolator_data.h at commit 71feeddf7cc3c9c7878eee18ea43c983631e6e84:
  --device sm_100 --gpu "an NVIDIA B200 (sm_100)" --source "openxla/xla xla/service/gpu/model/...h, commit 71feeddf..."
  --dtype f8e4m3fnxf8e4m3fn->bf16 for its FP8 (e4m3 x e4m3, bf16 output) GEMMs.
Rows are sorted by batch, m, n, k; the FLOP/s values are copied as written there.
"""
import argparse
import re
import sys

HEADER = """# Measured {dtype} GEMM throughput of {gpu}: achieved FLOP/s of b independent m x n x k
# products (2 b m n k FLOPs), b in {{1, 2, 4}}, m, n, k in {{256, 512, 1024, 2048, 4096}}.
# Source: XLA's matmul interpolator table, {source}, key "{device}", flops key "{dtype_key}".
# Copyright 2025 The OpenXLA Authors. Licensed under the Apache License, Version 2.0
#   (http://www.apache.org/licenses/LICENSE-2.0); values copied unchanged, only the layout differs.
# Regenerate: python3 models/compute/data/xla_matmul_table_to_csv.py matmul_interpolator_data.h{options} > this file
#   (each value is 2 b m n k / t for a whole-nanosecond time t, which checks the copy).
"""

DEFAULT_SOURCE = ("tensorflow/tensorflow\n#   third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h, commit\n"
                  "#   372d578bb861cc5804e56d37d93aec931a59762c")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("header")
    parser.add_argument("--device", default="sm_90")
    parser.add_argument("--dtype", default="bf16xbf16->bf16")
    parser.add_argument("--gpu", default="an NVIDIA H100 (sm_90)")
    parser.add_argument("--source", default=DEFAULT_SOURCE)
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
    options = "".join(" --%s '%s'" % (name, getattr(args, name)) for name in ("device", "dtype", "gpu")
                      if getattr(args, name) != parser.get_default(name))
    dtype = "bf16" if args.dtype == "bf16xbf16->bf16" else args.dtype
    sys.stdout.write(HEADER.format(dtype=dtype, dtype_key=args.dtype, gpu=args.gpu, source=args.source,
                                   device=args.device, options=options))
    print("batch,m,n,k,flops_per_s")
    for row in rows:
        print(",".join(str(v) for v in row))


if __name__ == "__main__":
    main()
