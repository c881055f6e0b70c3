#!/usr/bin/env python3
"""Step time of the allreduce topology on each of fedpar's all-reduce backends beside
torch.distributed DDP on gloo, in one run.

For each model (the 2NN, 199,210 parameters; the MLP 784-1024-256-10, 1,068,810) and worker count N,
each worker one process with one thread on its own batch of B samples per step:
  zmq-ring: `fedpar run`, topology = "allreduce": fedpar's ring over ZeroMQ TCP loopback.
  mpi:      `mpirun -n N+1 fedpar launch` with allreduce.backend = "mpi": MPI_Allreduce of the
            machine's Open MPI (shared memory between ranks of one host).
  mpi-tcp:  the same with Open MPI told to use TCP alone (--mca btl tcp,self), the transport the
            zmq-ring and gloo use: what is MPI's algorithm and what its shared memory.
  fedpar's step = the server's round (task out, every worker's gather + forward + backward +
            all-reduce + SGD step, reports in); compute = the slowest worker's gather + forward +
            backward; all-reduce = the last worker to arrive's time in the sum (the others wait
            for it there too), the collective's own duration.
  gloo:     DistributedDataParallel, gloo backend, TCP loopback, random inputs of the same shape.
            step = the slowest rank's forward + backward (its all-reduce overlapped) + SGD step,
            from a barrier; compute = a separate no_sync() pass of forward + backward.
Overhead = median step - median compute. The three sides alternate row by row for --rounds
rounds; medians pool all steps after --warmup per run.
Claim: the mpi backend's all-reduce is no slower than the zmq-ring's at every row (what the
backend is for: a cluster's tuned collective); the script exits 1 when it fails.
Usage: /usr/bin/python3 bench/allreduce_backends.py [--fedpar build/fedpar] [--workers 2,4]
       [--steps 100] [--warmup 10] [--rounds 3] [--batch 50]"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from ddp_steps import free_port, timed_ddp_steps

MODELS = {"2nn": [200, 200], "mlp1m": [1024, 256]}  # hidden layers (784 in, 10 out)


# ---- gloo ----
def gloo_worker(rank, world, port, hidden, batch, steps, out_path):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(rank)
    dims = [784] + hidden + [10]
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    ddp = DDP(torch.nn.Sequential(*layers))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = (torch.rand(batch, 784), torch.randint(0, 10, (batch,)))
    with open(out_path, "w") as f:
        json.dump(timed_ddp_steps(ddp, opt, loss_fn, lambda r: data, steps), f)
    sys.stdout.flush()
    os._exit(0)  # gloo's teardown can hang with more processes than cores


def run_gloo(model, n, batch, steps, warmup):
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"rank{r}.json") for r in range(n)]
        procs = [subprocess.Popen([sys.executable, __file__, "--gloo-rank", str(r), "--world", str(n),
                                   "--port", str(port), "--model", model, "--batch", str(batch),
                                   "--steps", str(warmup + steps), "--out", outs[r]]) for r in range(n)]
        for p in procs:
            if p.wait(timeout=900) != 0:
                raise SystemExit(f"allreduce_backends: a gloo worker failed (exit {p.returncode})")
        ranks = [json.load(open(o)) for o in outs]
    idx = range(warmup, warmup + steps)
    return {k: [max(r[k][i] for r in ranks) for i in idx] for k in ("step", "compute")}


# ---- fedpar ----
def fedpar_config(path, results, model, n, batch, rounds):
    hidden = ", ".join(map(str, MODELS[model]))
    with open(path, "w") as f:
        f.write(f"""name = "run"
results_dir = "{results}"
seed = 1
regime = "gradient"
topology = "allreduce"
rounds = {rounds}
eval_every = {rounds}
processes = {n}
threads = 1
[model]
name = "mlp"
hidden = [{hidden}]
[partition]
scheme = "iid"
clients = {n}
[sgd]
batch = {batch}
[optimizer]
lr = 0.1
""")


def run_fedpar(exe, backend, model, n, batch, steps, warmup):
    with tempfile.TemporaryDirectory() as tmp:
        cfg, results = os.path.join(tmp, "run.toml"), os.path.join(tmp, "res")
        fedpar_config(cfg, results, model, n, batch, warmup + steps)
        if backend == "zmq-ring":
            cmd = [exe, "run", cfg]
        else:
            tcp = ["--mca", "btl", "tcp,self"] if backend == "mpi-tcp" else []
            cmd = ["mpirun", "--oversubscribe", "-n", str(n + 1), "-x", f"MASTER_PORT={free_port()}"] + tcp + [
                exe, "launch", cfg, "--quiet", "--set", "allreduce.backend=mpi"]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        if p.returncode != 0:
            raise SystemExit(f"allreduce_backends: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
        out = {"step": [], "compute": [], "allreduce": []}
        with open(os.path.join(results, "run", "metrics.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") != "round" or r["round"] <= warmup:
                    continue
                out["step"].append(r["wait_seconds"])
                out["compute"].append(max(w["compute_seconds"] for w in r["workers"]))
                out["allreduce"].append(min(w["allreduce_seconds"] for w in r["workers"]))
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fedpar", default="build/fedpar")
    ap.add_argument("--workers", default="2,4")
    ap.add_argument("--models", default="2nn,mlp1m")
    ap.add_argument("--batch", type=int, default=50, help="samples per worker per step")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--gloo-rank", type=int, help=argparse.SUPPRESS)  # internal: one gloo worker
    ap.add_argument("--world", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.gloo_rank is not None:
        gloo_worker(a.gloo_rank, a.world, a.port, MODELS[a.model], a.batch, a.steps, a.out)
    if not shutil.which("mpirun"):
        raise SystemExit("allreduce_backends: mpirun not found (scripts/setup.sh --with-mpi)")
    workers = [int(w) for w in a.workers.split(",")]
    models = a.models.split(",")
    sides = ("zmq-ring", "mpi", "mpi-tcp", "gloo")
    runs = {(s, m, n): {} for s in sides for m in models for n in workers}
    for r in range(a.rounds):
        for m in models:
            for n in workers:
                print(f"allreduce_backends: round {r + 1}/{a.rounds}, {m}, N = {n}", file=sys.stderr)
                for s in sides:
                    got = (run_gloo(m, n, a.batch, a.steps, a.warmup) if s == "gloo" else
                           run_fedpar(a.fedpar, s, m, n, a.batch, a.steps, a.warmup))
                    for k, v in got.items():
                        runs[(s, m, n)].setdefault(k, []).extend(v)
    ms = lambda v: 1000 * statistics.median(v)
    over = lambda d: ms(d["step"]) - ms(d["compute"])
    print(f"Allreduce topology, batch {a.batch} per worker, 1 thread per process, {a.rounds} x "
          f"{a.steps} steps per cell (medians, ms per step); overhead = step - compute")
    print()
    print("| model | N | zmq-ring step | zmq-ring all-reduce | zmq-ring overhead | mpi step | mpi all-reduce "
          "| mpi overhead | mpi-tcp step | mpi-tcp all-reduce | gloo DDP step | gloo DDP overhead "
          "| mpi / zmq-ring all-reduce | mpi-tcp / zmq-ring all-reduce | overhead vs gloo (zmq-ring, mpi) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for m in models:
        for n in workers:
            z, p, t, g = (runs[(s, m, n)] for s in sides)
            ratio = ms(p["allreduce"]) / ms(z["allreduce"])
            worst = max(worst, ratio)
            print(f"| {m} | {n} | {ms(z['step']):.2f} | {ms(z['allreduce']):.2f} | {over(z):.2f} | "
                  f"{ms(p['step']):.2f} | {ms(p['allreduce']):.2f} | {over(p):.2f} | {ms(t['step']):.2f} | "
                  f"{ms(t['allreduce']):.2f} | {ms(g['step']):.2f} | {over(g):.2f} | {ratio:.2f} | "
                  f"{ms(t['allreduce']) / ms(z['allreduce']):.2f} | {over(z) / over(g):.2f}, {over(p) / over(g):.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{s}/{m}/{n}": v for (s, m, n), v in runs.items()}, f)
    ok = worst <= 1.0
    print(f"\nclaim (mpi all-reduce <= zmq-ring's at every row): {'holds' if ok else 'FAILS'}; "
          f"highest ratio {worst:.2f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
