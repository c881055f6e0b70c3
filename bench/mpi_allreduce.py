#!/usr/bin/env python3
"""One side of bench/allreduce_compare.py: MPI_Allreduce (Debian's OpenMPI, through mpi4py) of N
float32 vectors, timed like the other sides (median per rank over --reps after 2 warm-ups, the
slowest rank's median). Run under mpirun; rank 0 prints one JSON line per length.
Usage: mpirun -np N /usr/bin/python3 bench/mpi_allreduce.py --floats 1000,1000000 --reps 20"""
import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floats", default="1000,1000000")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    for n in [int(v) for v in a.floats.split(",")]:
        send = np.full(n, float(rank + 1), dtype=np.float32)
        recv = np.empty_like(send)
        secs = []
        for r in range(-2, a.reps):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(send, recv, op=MPI.SUM)
            dt = time.perf_counter() - t0
            if r >= 0:
                secs.append(dt)
        worst = comm.allreduce(statistics.median(secs), op=MPI.MAX)
        if rank == 0:
            algbw = n * 4 / worst / 1e9
            print(json.dumps({"side": "mpi", "workers": world, "floats": n, "seconds": worst,
                              "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (world - 1) / world}), flush=True)


if __name__ == "__main__":
    main()
