#!/usr/bin/env python3
"""Per-step overhead of fedpar's `gradient` regime beside torch.distributed DDP, in one run.

Both sides train the 2NN (784-200-200-10, softmax cross-entropy, SGD lr 0.1) with 4 worker
processes, each on its own per-worker batch B, 1 thread per process, over TCP loopback:
  fedpar: `fedpar run` with regime = "gradient": each round the server sends the model, 4 client
          processes compute one gradient each on B MNIST samples, the server averages and steps.
          step = the round's time at the server (send, wait, aggregate, update);
          compute = the slowest client's forward + backward that round.
  DDP:    DistributedDataParallel (gloo backend) with the same model and batch shape.
          step = forward + backward (with its all-reduce) + optimizer step, on rank 0;
          compute = forward + backward under no_sync() (no communication), slowest rank.
Overhead = median(step) - median(compute): everything a step costs beyond the arithmetic. The
two sides alternate batch by batch for --rounds rounds; medians are over all of them.
Usage: /usr/bin/python3 bench/ddp_overhead.py [--fedpar build/fedpar] [--rounds 3] [--steps 200]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_worker(rank, world, port, batch, steps, warmup, out_path):
    """One DDP rank: times `steps` synchronized steps and as many no_sync() compute passes."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    net = torch.nn.Sequential(torch.nn.Linear(784, 200), torch.nn.ReLU(), torch.nn.Linear(200, 200),
                              torch.nn.ReLU(), torch.nn.Linear(200, 10))
    ddp = DDP(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(batch, 784)
    y = torch.randint(0, 10, (batch,))
    step_t, compute_t = [], []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss_fn(ddp(x), y).backward()  # the all-reduce overlaps the backward pass
        opt.step()
        t1 = time.perf_counter()
        with ddp.no_sync():  # the same arithmetic without communication
            opt.zero_grad(set_to_none=False)
            loss_fn(ddp(x), y).backward()
        t2 = time.perf_counter()
        if i >= warmup:
            step_t.append(t1 - t0)
            compute_t.append(t2 - t1)
    with open(out_path, "w") as f:
        json.dump({"step": step_t, "compute": compute_t}, f)
    # No destroy_process_group: gloo's teardown sometimes hangs with more processes than cores.
    sys.stdout.flush()
    os._exit(0)


def run_ddp(batch, steps, warmup, workers):
    """Starts `workers` processes of this script in --ddp-rank mode and merges what they wrote."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"rank{r}.json") for r in range(workers)]
        procs = [subprocess.Popen([sys.executable, __file__, "--ddp-rank", str(r), "--workers", str(workers),
                                   "--port", str(port), "--batches", str(batch), "--steps", str(steps),
                                   "--warmup", str(warmup), "--out", outs[r]]) for r in range(workers)]
        for p in procs:
            if p.wait(timeout=600) != 0:
                raise SystemExit(f"ddp_overhead: a DDP worker failed (exit {p.returncode})")
        ranks = []
        for o in outs:
            with open(o) as f:
                ranks.append(json.load(f))
    return {"step": ranks[0]["step"],
            "compute": [max(r["compute"][i] for r in ranks) for i in range(steps)]}


def run_fedpar(exe, batch, steps, warmup, workers):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "ddp.toml")
        with open(cfg, "w") as f:
            f.write(f"""name = "overhead"
results_dir = "{tmp}"
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
lr = 0.1
""")
        subprocess.run([exe, "run", cfg], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        step, compute = [], []
        with open(os.path.join(tmp, "overhead", "metrics.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if r["round"] <= warmup:
                    continue
                step.append(r["wait_seconds"] + r["aggregate_seconds"])
                compute.append(max(c["compute_seconds"] for c in r["clients"]))
        return {"step": step, "compute": compute}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fedpar", default="build/fedpar")
    ap.add_argument("--batches", default="10,50,600", help="per-worker batch sizes")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--ddp-rank", type=int, help=argparse.SUPPRESS)  # internal: run one DDP worker
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ddp_rank is not None:
        ddp_worker(a.ddp_rank, a.workers, a.port, int(a.batches), a.steps, a.warmup, a.out)
    batches = [int(b) for b in a.batches.split(",")]
    runs = {(side, b): {"step": [], "compute": []} for side in ("fedpar", "ddp") for b in batches}
    for r in range(a.rounds):
        for b in batches:
            print(f"ddp_overhead: round {r + 1}/{a.rounds}, batch {b}", file=sys.stderr)
            for side, fn in (("fedpar", lambda: run_fedpar(a.fedpar, b, a.steps, a.warmup, a.workers)),
                             ("ddp", lambda: run_ddp(b, a.steps, a.warmup, a.workers))):
                got = fn()
                runs[(side, b)]["step"] += got["step"]
                runs[(side, b)]["compute"] += got["compute"]
    ms = lambda v: 1000 * statistics.median(v)
    print(f"2NN, {a.workers} worker processes, 1 thread each, {a.rounds} x {a.steps} steps per row "
          f"(medians, ms per step); overhead = step - compute")
    print()
    print("| batch/worker | fedpar step | fedpar compute | fedpar overhead | DDP step | DDP compute "
          "| DDP overhead | overhead ratio (fedpar/DDP) |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for b in batches:
        f, d = runs[("fedpar", b)], runs[("ddp", b)]
        fo, do = ms(f["step"]) - ms(f["compute"]), ms(d["step"]) - ms(d["compute"])
        rows.append({"batch": b, "fedpar": f, "ddp": d, "fedpar_overhead_ms": fo, "ddp_overhead_ms": do})
        print(f"| {b} | {ms(f['step']):.2f} | {ms(f['compute']):.2f} | {fo:.2f} | {ms(d['step']):.2f} | "
              f"{ms(d['compute']):.2f} | {do:.2f} | {fo / do:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f)


if __name__ == "__main__":
    main()
