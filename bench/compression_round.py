#!/usr/bin/env python3
"""A gradient-regime round with each uplink codec beside the same round uncompressed, in one run.

`fedpar run` with regime = "gradient", 4 client processes over TCP loopback, the 1M-parameter MLP
(784-1024-256-10, 1,068,810 floats) on MNIST, B = 32 samples per client per round. A round's time
is the server's: broadcast + waiting for the 4 updates (the clients' compute, their encoding, the
bytes on the socket, the server's decoding) + aggregation. The configurations alternate run by run
for --repeats repetitions of --rounds rounds each (the first --warmup rounds of every run left out);
the table gives medians over all the rest.
Goal: with compression on, a round is not slower than without it (ratio <= 1.0 for every codec
row); the script exits 1 when it fails.
Usage: /usr/bin/python3 bench/compression_round.py [--fedpar build/fedpar] [--repeats 3]
       [--rounds 30] [--codecs none,fp16,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONFIG = """
regime = "gradient"
processes = 4
threads = 1
rounds = {rounds}
eval_every = 1000000
bind = "tcp://127.0.0.1:*"
[model]
name = "mlp"
hidden = [1024, 256]
[data]
name = "mnist"
train_limit = 8000
test_limit = 500
[partition]
scheme = "iid"
clients = 4
[sgd]
batch = 32
[optimizer]
lr = 0.05
"""

# name -> the [compression] settings of that row
ROWS = {
    "none": [],
    "fp16": ["compression.uplink=fp16"],
    "bf16": ["compression.uplink=bf16"],
    "topk-1%-ef": ["compression.uplink=topk", "compression.ratio=0.01",
                   "compression.error_feedback=true"],
    "randk-1%-ef": ["compression.uplink=randk", "compression.ratio=0.01",
                    "compression.error_feedback=true"],
    "qsgd-s4": ["compression.uplink=qsgd", "compression.levels=4"],
    "scaled-sign-ef": ["compression.uplink=scaled_sign", "compression.error_feedback=true"],
    "sign-majority": ["compression.uplink=sign", "compression.aggregate=majority"],
}


def run(fedpar, cfg, name, sets, out):
    args = [fedpar, "run", cfg, "--set", f"name={name}", "--set", f"results_dir={out}"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"compression_round: {name} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    rounds = []
    with open(os.path.join(out, name, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind", "round") != "round":
                continue
            secs = r["broadcast_seconds"] + r["wait_seconds"] + r["aggregate_seconds"]
            up = statistics.median(c["bytes_up"] for c in r["clients"])
            rounds.append((r["round"], secs, up, r["bytes_down_per_task"]))
    return rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fedpar", default="build/fedpar")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--codecs", default=",".join(ROWS))
    a = ap.parse_args()
    names = a.codecs.split(",")
    for n in names:
        if n not in ROWS:
            sys.exit(f"compression_round: unknown row {n} (known: {', '.join(ROWS)})")
    if "none" not in names:
        names.insert(0, "none")
    times = {n: [] for n in names}
    up, down = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "round.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(rounds=a.rounds))
        for rep in range(a.repeats):
            order = names if rep % 2 == 0 else names[::-1]
            for n in order:
                print(f"compression_round: repeat {rep + 1}/{a.repeats}, {n}", file=sys.stderr)
                rs = run(a.fedpar, cfg, f"{n}-{rep}", ROWS[n], tmp)
                times[n] += [secs for rnd, secs, _, _ in rs if rnd >= a.warmup]
                up[n], down[n] = rs[-1][2], rs[-1][3]
    base = statistics.median(times["none"])
    print(f"4 client processes, MLP 784-1024-256-10, B = 32 per client, {a.repeats} x "
          f"{a.rounds - a.warmup} rounds per row; {os.cpu_count()} cores\n")
    print("| uplink | round median (ms) | round p90 (ms) | vs none | bytes up per client "
          "| bytes down per task |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for n in names:
        t = sorted(times[n])
        med, p90 = statistics.median(t), t[min(len(t) - 1, int(0.9 * len(t)))]
        ratio = med / base
        if n != "none":
            worst = max(worst, ratio)
        print(f"| {n} | {1e3 * med:.2f} | {1e3 * p90:.2f} | {ratio:.2f} | {up[n]:.0f} | "
              f"{down[n]} |")
    ok = worst <= 1.0
    print(f"\ngoal (every compressed round within 1.0x of uncompressed): "
          f"{'holds' if ok else 'FAILS'}; highest ratio {worst:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
