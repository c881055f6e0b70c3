"""What the DDP sides of bench/ddp_overhead.py and bench/allreduce_backends.py share: a free port
for gloo's rendezvous and the timed step loop."""
import socket
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_ddp_steps(ddp, opt, loss_fn, batch, steps):
    """Per step r: from a barrier, batch(r) + forward + backward (with its all-reduce) + SGD step;
    then, after another barrier (so it never falls inside a step's window), the same batch +
    forward + backward under no_sync(), without communication (its gradients are dropped).
    Returns this rank's seconds, {"step": [...], "compute": [...]}."""
    import torch.distributed as dist
    step_t, compute_t = [], []
    for r in range(steps):
        dist.barrier()
        t0 = time.perf_counter()
        x, y = batch(r)
        opt.zero_grad(set_to_none=False)
        loss_fn(ddp(x), y).backward()  # the all-reduce overlaps the backward pass
        opt.step()
        step_t.append(time.perf_counter() - t0)
        dist.barrier()
        t0 = time.perf_counter()
        with ddp.no_sync():
            x, y = batch(r)
            opt.zero_grad(set_to_none=False)
            loss_fn(ddp(x), y).backward()
        compute_t.append(time.perf_counter() - t0)
    return {"step": step_t, "compute": compute_t}
