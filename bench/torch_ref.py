"""PyTorch reference for bench_train (CPU, or the GPU with --device cuda): the same models, batches, thread counts and step
(gather a shuffled batch, forward, loss, backward, SGD update), timed the same way (median of
--reps repetitions, each at least --min-seconds). Prints JSON lines. Run with /usr/bin/python3
(Debian's python3-torch); scripts/bench.sh does."""
import argparse
import ctypes
import ctypes.util
import json
import os
import struct
import sys
import time

import torch
import torch.nn as nn


def blas_info():
    """Which BLAS torch links and, for OpenBLAS, which kernel core it picked."""
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return "OpenBLAS core=%s (%s)" % (lib.openblas_get_corename().decode(),
                                             lib.openblas_get_config().decode())
        return name + " (not OpenBLAS: reference BLAS?)"
    return "unknown"


def model_for(name):
    if name == "2nn":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200),
                             nn.ReLU(), nn.Linear(200, 10))
    if name == "logreg":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))
    raise ValueError(name)


def load_mnist(data_dir):
    path = os.path.join(data_dir, "mnist")
    try:
        with open(os.path.join(path, "train-images-idx3-ubyte"), "rb") as f:
            raw = f.read()
        with open(os.path.join(path, "train-labels-idx1-ubyte"), "rb") as f:
            labels = f.read()
        n = struct.unpack(">I", raw[4:8])[0]
        x = torch.frombuffer(bytearray(raw[16:]), dtype=torch.uint8).float().div_(255).view(n, 1, 28, 28)
        y = torch.frombuffer(bytearray(labels[8:]), dtype=torch.uint8).long()
        return x, y, True
    except OSError:
        g = torch.Generator().manual_seed(1)
        return torch.rand(60000, 1, 28, 28, generator=g), torch.randint(0, 10, (60000,), generator=g), False


def measure(x, y, model_name, batch, threads, reps, min_seconds, device):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = model_for(model_name).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    n = x.shape[0]
    b = n if batch == 0 else batch
    order = torch.randperm(n)
    cursor = [0]

    def step():
        if cursor[0] + b > n:
            cursor[0] = 0
        idx = order[cursor[0]:cursor[0] + b]
        cursor[0] += b
        xb, yb = x[idx].to(device), y[idx].to(device)  # host batch to the device, as fedpar does
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()

    if b < n:
        for _ in range(3):
            step()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rates = []
    for _ in range(reps):
        sync()
        steps, t0 = 0, time.perf_counter()
        while True:
            step()
            steps += 1
            if steps % 10 == 0 or b >= 600:
                sync()  # queued GPU work counts in the time it took
            elapsed = time.perf_counter() - t0
            if elapsed >= min_seconds:
                break
        sync()
        elapsed = time.perf_counter() - t0
        rates.append(steps * b / elapsed)
    return rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=0.3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--batch", default="")
    ap.add_argument("--data-dir", default=os.environ.get("FEDPAR_DATA_DIR", "data"))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    x, y, real = load_mnist(args.data_dir)
    if args.device == "cuda":
        cases = [("2nn", 10), ("2nn", 50), ("2nn", 600), ("cnn", 10), ("cnn", 50), ("cnn", 600)]
        args.threads = "1"
        # Plain FP32 products, as fedpar's CUDA backend (no TF32).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        blas = "cuBLAS/cuDNN on " + torch.cuda.get_device_name(0)
    else:
        cases = [("2nn", 10), ("2nn", 50), ("2nn", 600), ("2nn", 0), ("logreg", 600), ("cnn", 50)]
        blas = blas_info()
    info = {"torch": torch.__version__, "blas": blas,
            "mkldnn": torch.backends.mkldnn.is_available(), "data": "mnist" if real else "random"}
    for t in [int(v) for v in args.threads.split(",")]:
        for model_name, batch in cases:
            if args.only and model_name != args.only:
                continue
            if args.batch and args.batch != ("full" if batch == 0 else str(batch)):
                continue
            rates = measure(x, y, model_name, batch, t, args.reps, args.min_seconds, args.device)
            rates_sorted = sorted(rates)
            k = len(rates_sorted)
            med = rates_sorted[k // 2] if k % 2 else 0.5 * (rates_sorted[k // 2 - 1] + rates_sorted[k // 2])
            print(json.dumps({"side": "pytorch", "model": model_name,
                              "batch": "full" if batch == 0 else str(batch), "threads": t,
                              "samples_per_s": med, "reps": rates, "backend": info}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
