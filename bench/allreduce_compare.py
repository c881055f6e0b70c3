#!/usr/bin/env python3
"""fedpar's ring all-reduce beside torch.distributed's all_reduce on the gloo backend and OpenMPI's
MPI_Allreduce (bench/mpi_allreduce.py, when mpirun and mpi4py are installed), in one run:
for each worker count N and vector length, the median time of one all-reduce over N processes on
TCP loopback (the slowest worker's median), algbw = bytes / time and busbw = algbw * 2 (N - 1) / N,
as NCCL-tests define them. The two sides alternate N by N for --rounds rounds; medians pool all.
Usage: /usr/bin/python3 bench/allreduce_compare.py [--bench build/bench_allreduce] [--workers 2,4,8]
       [--floats 1000,100000,1000000,4000000] [--reps 20] [--rounds 2]"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_worker(rank, world, port, sizes, reps):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    for n in sizes:
        t = torch.full((n,), float(rank + 1))
        secs = []
        for r in range(-2, reps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            dt = time.perf_counter() - t0
            if r >= 0:
                secs.append(dt)
        worst = torch.tensor([statistics.median(secs)])
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        if rank == 0:
            b = n * 4
            algbw = b / worst.item() / 1e9
            print(json.dumps({"side": "gloo", "workers": world, "floats": n, "seconds": worst.item(),
                              "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (world - 1) / world}), flush=True)
    dist.destroy_process_group()


def run_gloo(n, sizes, reps):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, __file__, "--gloo-rank", str(r), "--world", str(n), "--port",
                               str(port), "--floats", ",".join(map(str, sizes)), "--reps", str(reps)],
                              stdout=subprocess.PIPE, text=True) for r in range(n)]
    out = procs[0].communicate()[0]
    for p in procs[1:]:
        p.wait()
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def run_ring(exe, n, sizes, reps):
    out = subprocess.run([exe, "--workers", str(n), "--floats", ",".join(map(str, sizes)), "--reps", str(reps),
                          "--json"], check=True, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def run_mpi(n, sizes, reps):
    here = os.path.dirname(os.path.abspath(__file__))
    # Loopback TCP like the other two sides (no shared-memory transport), one core per rank.
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), "--mca", "btl", "self,tcp",
           "--mca", "btl_tcp_if_include", "lo", "--bind-to", "none",
           "/usr/bin/python3", os.path.join(here, "mpi_allreduce.py"), "--floats", ",".join(map(str, sizes)),
           "--reps", str(reps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def have_mpi():
    import shutil
    if not shutil.which("mpirun"):
        return False
    return subprocess.run(["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench_allreduce")
    ap.add_argument("--workers", default="2,4,8")
    ap.add_argument("--floats", default="1000,100000,1000000,4000000")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default="")
    ap.add_argument("--gloo-rank", type=int, default=-1)
    ap.add_argument("--world", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    sizes = [int(v) for v in a.floats.split(",")]
    if a.gloo_rank >= 0:
        return gloo_worker(a.gloo_rank, a.world, a.port, sizes, a.reps)
    rows = {}
    mpi = have_mpi()
    if not mpi:
        print("allreduce: no mpirun/mpi4py (apt install openmpi-bin python3-mpi4py): MPI column left out",
              file=sys.stderr)
    for rnd in range(a.rounds):
        for n in [int(v) for v in a.workers.split(",")]:
            print(f"allreduce: round {rnd + 1}, {n} workers", file=sys.stderr, flush=True)
            got = run_ring(a.bench, n, sizes, a.reps) + run_gloo(n, sizes, a.reps)
            if mpi:
                got += run_mpi(n, sizes, a.reps)
            for r in got:
                rows.setdefault((n, r["floats"], r["side"]), []).append(r["seconds"])
    import torch
    print(f"{os.cpu_count()} cores; torch {torch.__version__}; median time of one all-reduce, "
          f"busbw = bytes / time * 2 (N - 1) / N; 'vs' = their time / fedpar's (> 1: fedpar faster)\n")
    mpi_head = (" MPI (us) |", " MPI busbw (GB/s) |", " vs MPI |") if mpi else ("", "", "")
    print(f"| N | floats | fedpar ring (us) | gloo (us) |{mpi_head[0]} fedpar busbw (GB/s) | gloo busbw (GB/s) |"
          f"{mpi_head[1]} vs gloo |{mpi_head[2]}")
    print("|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if mpi else ""))
    out = []
    for n in [int(v) for v in a.workers.split(",")]:
        for f in sizes:
            ring, gloo = statistics.median(rows[(n, f, "fedpar-ring")]), statistics.median(rows[(n, f, "gloo")])
            bw = lambda t: f * 4 / t / 1e9 * 2 * (n - 1) / n
            m = statistics.median(rows[(n, f, "mpi")]) if mpi else None
            cells = (f" {m * 1e6:.0f} |", f" {bw(m):.3f} |", f" {m / ring:.2f} |") if mpi else ("", "", "")
            print(f"| {n} | {f} | {ring * 1e6:.0f} | {gloo * 1e6:.0f} |{cells[0]} {bw(ring):.3f} | {bw(gloo):.3f} |"
                  f"{cells[1]} {gloo / ring:.2f} |{cells[2]}")
            out.append({"workers": n, "floats": f, "ring_seconds": ring, "gloo_seconds": gloo, "mpi_seconds": m})
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
