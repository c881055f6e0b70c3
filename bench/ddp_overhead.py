#!/usr/bin/env python3
"""Per-step overhead of fedpar's `gradient` regime beside torch.distributed DDP, in one run.

Both sides train the 2NN (784-200-200-10, softmax cross-entropy, SGD lr 0.1) with 4 worker
processes, 1 thread each, over TCP loopback, on the same MNIST batches: worker k at step r uses
the rows fedpar's client k draws for round r (fedpar's iid partition and batch draw, reproduced
here with its Philox streams and checked against the run's manifest.json).
  fedpar: `fedpar run` with regime = "gradient": each round the server sends the model, 4 client
          processes compute one gradient each on B MNIST samples, the server averages and steps.
          step = the round's time at the server (send, wait, aggregate, update);
          compute = the slowest client's gather + forward + backward that round.
  DDP:    DistributedDataParallel (gloo backend). Every step starts from a barrier (outside the
          timing); step = gather + forward + backward (with its all-reduce) + optimizer step,
          the slowest rank's; compute = the same gather + forward + backward under no_sync() in a
          separate pass, after its own barrier, the slowest rank's.
Overhead = median(step) - median(compute): everything a step costs beyond the arithmetic. The
two sides alternate batch by batch for --rounds rounds; medians are over all of them.
Goal: overhead ratio fedpar/DDP <= 1.0 at every batch; the script exits 1 when it fails.
Usage: /usr/bin/python3 bench/ddp_overhead.py [--fedpar build/fedpar] [--rounds 3] [--steps 200]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from ddp_steps import free_port, timed_ddp_steps

SEED = 1  # fedpar's run seed (written into the config): partition and batch draws

# ---- fedpar's random streams (core/rng.cc): Philox4x32-10 keyed by (seed, purpose, id, sub) ----
M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & M64
    return h


class Rng:
    """fedpar::Rng's next_u64 and below(), drawn many at a time with numpy."""

    def __init__(self, seed, purpose, id_=0, sub=0):
        k = splitmix64(splitmix64(seed) ^ fnv1a64(purpose))
        self.key, self.id, self.sub = (k & M32, k >> 32), id_, sub
        self.block, self.left = 0, np.zeros(0, np.uint64)  # next block index, unused words

    def _words(self, n):
        need = n - len(self.left)
        nb = max(0, (need + 3) // 4)
        ctr = np.arange(self.block, self.block + nb, dtype=np.uint64)
        c = [ctr & M32, ctr >> np.uint64(32), np.full(nb, self.id, np.uint64), np.full(nb, self.sub, np.uint64)]
        k0, k1 = self.key
        for r in range(10):
            if r:
                k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
            p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
            c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(M32),
                 (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(M32)]
        self.block += nb
        words = np.concatenate([self.left, np.stack(c, axis=1).reshape(-1)])
        self.left = words[n:]
        return words[:n]

    def below(self, ns):
        """below(n) for each n in ns, in order (every n > 1)."""
        w = self._words(2 * len(ns))
        x = w[0::2] | (w[1::2] << np.uint64(32))
        ns = np.asarray(ns, np.uint64)
        if np.any(x >= np.uint64(M64) - np.uint64(M64) % ns):  # fedpar would draw again; never seen
            raise SystemExit("ddp_overhead: a rejected draw; this reproduction of fedpar's Rng stops here")
        return (x % ns).tolist()


def iid_partition(n, clients, seed=SEED):
    """partitioners/schemes.cc iid: shuffle 0..n-1, cut into equal pieces, sort each."""
    v = list(range(n))
    for i, j in zip(range(n, 1, -1), Rng(seed, "partition").below(range(n, 1, -1))):
        v[i - 1], v[j] = v[j], v[i - 1]
    sizes = [n // clients + (c < n % clients) for c in range(clients)]
    starts = np.cumsum([0] + sizes)
    return [sorted(v[starts[c]:starts[c + 1]]) for c in range(clients)]


def gradient_batch(shard, batch, client, rnd, seed=SEED):
    """core/local_update.cc gradient_batch: the first `batch` of a partial Fisher-Yates."""
    v = list(shard)
    n = len(v)
    for i, j in enumerate(Rng(seed, "batch", client, rnd).below([n - i for i in range(batch)])):
        v[i], v[i + j] = v[i + j], v[i]
    return v[:batch]


def read_idx(path, dims):
    """An IDX file of uint8: 4-byte magic (0, 0, 8, dims), one big-endian uint32 per dimension."""
    raw = np.memmap(path, np.uint8, "r")
    head = np.frombuffer(raw[:4 + 4 * dims], ">u4")
    if head[0] != 0x800 + dims:
        raise SystemExit(f"ddp_overhead: {path} is not an IDX file of uint8 with {dims} dimensions")
    return raw[4 + 4 * dims:].reshape([int(d) for d in head[1:]])


# ---- DDP ----
def ddp_worker(rank, world, port, batches_path, data_dir, out_path):
    """One DDP rank: every step and every compute pass starts from a barrier and is timed alone."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    images = read_idx(os.path.join(data_dir, "mnist", "train-images-idx3-ubyte"), 3).reshape(-1, 784)
    labels = read_idx(os.path.join(data_dir, "mnist", "train-labels-idx1-ubyte"), 1)
    rows = np.load(batches_path)[:, rank]  # [step, row]
    net = torch.nn.Sequential(torch.nn.Linear(784, 200), torch.nn.ReLU(), torch.nn.Linear(200, 200),
                              torch.nn.ReLU(), torch.nn.Linear(200, 10))
    ddp = DDP(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()

    def batch(r):  # the gather, as fedpar's client does it: uint8 / 255 in float32
        idx = rows[r]
        return (torch.from_numpy(images[idx].astype(np.float32) / np.float32(255)),
                torch.from_numpy(labels[idx].astype(np.int64)))

    with open(out_path, "w") as f:
        json.dump(timed_ddp_steps(ddp, opt, loss_fn, batch, len(rows)), f)
    # No destroy_process_group: gloo's teardown sometimes hangs with more processes than cores.
    sys.stdout.flush()
    os._exit(0)


def run_ddp(batches, warmup, data_dir):
    """Starts one process of this script per worker in --ddp-rank mode; per step, the slowest rank."""
    workers = batches.shape[1]
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "batches.npy")
        np.save(path, batches)
        outs = [os.path.join(tmp, f"rank{r}.json") for r in range(workers)]
        procs = [subprocess.Popen([sys.executable, __file__, "--ddp-rank", str(r), "--workers", str(workers),
                                   "--port", str(port), "--batch-file", path, "--data", data_dir,
                                   "--out", outs[r]]) for r in range(workers)]
        for p in procs:
            if p.wait(timeout=900) != 0:
                raise SystemExit(f"ddp_overhead: a DDP worker failed (exit {p.returncode})")
        ranks = []
        for o in outs:
            with open(o) as f:
                ranks.append(json.load(f))
    steps = range(warmup, batches.shape[0])
    return {k: [max(r[k][i] for r in ranks) for i in steps] for k in ("step", "compute")}


# ---- fedpar ----
def run_fedpar(exe, batch, steps, warmup, workers, shards):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "ddp.toml")
        with open(cfg, "w") as f:
            f.write(f"""name = "overhead"
results_dir = "{tmp}"
seed = {SEED}
regime = "gradient"
rounds = {warmup + steps}
eval_every = {warmup + steps}
processes = {workers}
threads = 1
[model]
name = "2nn"
[partition]
scheme = "iid"
clients = {workers}
[sgd]
batch = {batch}
[optimizer]
lr = 0.1
""")
        subprocess.run([exe, "run", cfg], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(tmp, "overhead", "manifest.json")) as f:
            got = [c["indices"] for c in sorted(json.load(f)["clients"], key=lambda c: c["id"])]
        if got != shards:
            raise SystemExit("ddp_overhead: fedpar's manifest differs from this script's partition: "
                             "the DDP side would not train on the same batches")
        step, compute = [], []
        with open(os.path.join(tmp, "overhead", "metrics.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if r["round"] <= warmup:
                    continue
                step.append(r["wait_seconds"] + r["aggregate_seconds"])
                compute.append(max(c["compute_seconds"] for c in r["clients"]))
        return {"step": step, "compute": compute}


def torch_info():
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_ref import blas_info
    cfg = torch.__config__.show()
    blas = next((w.rstrip(",") for w in cfg.split() if w.startswith("BLAS_INFO=")), "BLAS_INFO=?")
    return (f"torch {torch.__version__} ({blas}, libblas.so.3 = {blas_info()}; MKL: "
            f"{torch.backends.mkl.is_available()}, oneDNN: {torch.backends.mkldnn.is_available()}; "
            f"1 thread per rank)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fedpar", default="build/fedpar")
    ap.add_argument("--data", default="data", help="folder holding mnist/ (as fedpar's data.dir)")
    ap.add_argument("--batches", default="10,50,600", help="per-worker batch sizes")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--ddp-rank", type=int, help=argparse.SUPPRESS)  # internal: run one DDP worker
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--batch-file", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ddp_rank is not None:
        ddp_worker(a.ddp_rank, a.workers, a.port, a.batch_file, a.data, a.out)
    n = len(read_idx(os.path.join(a.data, "mnist", "train-labels-idx1-ubyte"), 1))
    shards = iid_partition(n, a.workers)
    batches = [int(b) for b in a.batches.split(",")]
    rows = {b: np.array([[gradient_batch(shards[k], b, k, r) for k in range(a.workers)]
                         for r in range(a.warmup + a.steps)], np.int64) for b in batches}
    runs = {(side, b): {"step": [], "compute": []} for side in ("fedpar", "ddp") for b in batches}
    for r in range(a.rounds):
        for b in batches:
            print(f"ddp_overhead: round {r + 1}/{a.rounds}, batch {b}", file=sys.stderr)
            for side, fn in (("fedpar", lambda: run_fedpar(a.fedpar, b, a.steps, a.warmup, a.workers, shards)),
                             ("ddp", lambda: run_ddp(rows[b], a.warmup, a.data))):
                got = fn()
                runs[(side, b)]["step"] += got["step"]
                runs[(side, b)]["compute"] += got["compute"]
    ms = lambda v: 1000 * statistics.median(v)
    print(f"2NN, {a.workers} worker processes, 1 thread each, {a.rounds} x {a.steps} steps per row "
          f"(medians, ms per step); overhead = step - compute; same MNIST batches on both sides")
    print(f"PyTorch: {torch_info()}")
    print()
    print("| batch/worker | fedpar step | fedpar compute | fedpar overhead | DDP step | DDP compute "
          "| DDP overhead | overhead ratio (fedpar/DDP) |")
    print("|---|---|---|---|---|---|---|---|")
    rows_out, worst = [], 0.0
    for b in batches:
        f, d = runs[("fedpar", b)], runs[("ddp", b)]
        fo, do = ms(f["step"]) - ms(f["compute"]), ms(d["step"]) - ms(d["compute"])
        ratio = fo / do if do > 0 else float("inf")
        worst = max(worst, ratio)
        rows_out.append({"batch": b, "fedpar": f, "ddp": d, "fedpar_overhead_ms": fo, "ddp_overhead_ms": do})
        print(f"| {b} | {ms(f['step']):.2f} | {ms(f['compute']):.2f} | {fo:.2f} | {ms(d['step']):.2f} | "
              f"{ms(d['compute']):.2f} | {do:.2f} | {ratio:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows_out, f)
    ok = worst <= 1.0
    print(f"\ngoal (overhead ratio <= 1.0 at every batch): {'holds' if ok else 'FAILS'}; highest ratio {worst:.2f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
