#!/usr/bin/env python3
"""How far apart two runs' final models are: relative L2 distance ||a - b|| / ||b|| and the largest
|a - b|, over every tensor of their model.safetensors (float32, the same names and shapes), in
double; plain Python (the GPU machine's and this one's python3 alike).
Usage: python3 scripts/model_distance.py RESULTS_A RESULTS_B   (prints one line; exit 2 on a mismatch)"""
import json
import math
import os
import struct
import sys
from array import array


def tensors(results):
    path = os.path.join(results, "model.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"model_distance: {path}: {name} is {t['dtype']}, not F32")
        begin, end = t["data_offsets"]
        values = array("f")
        values.frombytes(data[begin:end])
        if sys.byteorder != "little":
            values.byteswap()
        out[name] = values
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
    if sorted(a) != sorted(b) or any(len(a[k]) != len(b[k]) for k in a):
        print("model_distance: the two models have different tensors", file=sys.stderr)
        sys.exit(2)
    diff2 = norm2 = biggest = 0.0
    count = 0
    for k in sorted(a):
        for x, y in zip(a[k], b[k]):  # floats widen to Python's doubles
            d = x - y
            diff2 += d * d
            norm2 += y * y
            biggest = max(biggest, abs(d))
        count += len(a[k])
    print(f"relative distance {math.sqrt(diff2 / norm2):.3e}, max |difference| {biggest:.3e} "
          f"over {count} parameters")


if __name__ == "__main__":
    main()
