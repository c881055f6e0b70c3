"""PyTorch reference for the centralized baseline: the 2NN (784-200-200-10, default init) trained
with plain SGD, batch 10, lr 0.1 on MNIST in [0, 1], one shuffled pass per epoch; prints the test
accuracy per seed. Usage: /usr/bin/python3 bench/torch_accuracy.py EPOCHS [SEEDS...]"""
import os
import struct
import sys

import torch
import torch.nn as nn


def load(data_dir, prefix):
    with open(os.path.join(data_dir, "mnist", prefix + "-images-idx3-ubyte"), "rb") as f:
        raw = f.read()
    with open(os.path.join(data_dir, "mnist", prefix + "-labels-idx1-ubyte"), "rb") as f:
        lab = f.read()
    n = struct.unpack(">I", raw[4:8])[0]
    x = torch.frombuffer(bytearray(raw[16:]), dtype=torch.uint8).float().div(255).view(n, 784)
    return x, torch.frombuffer(bytearray(lab[8:]), dtype=torch.uint8).long()


def main():
    torch.set_num_threads(1)
    data_dir = os.environ.get("FEDPAR_DATA_DIR", "data")
    xtr, ytr = load(data_dir, "train")
    xte, yte = load(data_dir, "t10k")
    epochs = int(sys.argv[1])
    for seed in [int(s) for s in sys.argv[2:]] or [1, 2, 3, 4, 5]:
        torch.manual_seed(seed)
        m = nn.Sequential(nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(),
                          nn.Linear(200, 10))
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        loss_fn = nn.CrossEntropyLoss()
        for _ in range(epochs):
            perm = torch.randperm(60000)
            for i in range(0, 60000, 10):
                idx = perm[i:i + 10]
                opt.zero_grad()
                loss_fn(m(xtr[idx]), ytr[idx]).backward()
                opt.step()
        with torch.no_grad():
            acc = (m(xte).argmax(1) == yte).float().mean().item()
        print("epochs %d seed %d test accuracy: %.2f%%" % (epochs, seed, 100 * acc), flush=True)


if __name__ == "__main__":
    main()
