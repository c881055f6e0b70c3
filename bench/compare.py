"""Joins bench_train's and torch_ref.py's JSON lines into one table with the ratio
fedpar / PyTorch per row (medians). Usage: compare.py FEDPAR.jsonl TORCH.jsonl"""
import json
import sys


def median(v):
    v = sorted(v)
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def load(path):
    """Rows keyed by (model, batch, threads); repeated rows (interleaved rounds) pool their reps."""
    rows = {}
    info = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            key = (j["model"], j["batch"], j["threads"])
            rows.setdefault(key, []).extend(j["reps"])
            info = j["backend"]
    return {k: median(v) for k, v in rows.items()}, info


def main():
    ours, our_info = load(sys.argv[1])
    ref, ref_info = load(sys.argv[2])
    if not ours or not ref:
        sys.exit("compare.py: no rows from %s" % (sys.argv[1] if not ours else sys.argv[2]))
    print("fedpar:  %s" % our_info)
    print("PyTorch: torch %s, BLAS: %s, oneDNN available: %s, data: %s" % (
        ref_info["torch"], ref_info["blas"], ref_info["mkldnn"], ref_info["data"]))
    print()
    print("| model | batch | threads | fedpar samples/s | PyTorch samples/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = None
    for key, row in ours.items():
        if key not in ref:
            continue
        a, b = row, ref[key]
        ratio = a / b
        worst = ratio if worst is None else min(worst, ratio)
        print("| %s | %s | %d | %.0f | %.0f | %.2f |" % (key[0], key[1], key[2], a, b, ratio))
    print()
    if worst is None:
        sys.exit("compare.py: no row is on both sides (model, batch, threads): %s vs %s" % (
            sorted(ours), sorted(ref)))
    print("lowest ratio: %.2f (medians over all repetitions of all rounds; the JSON files hold "
          "every repetition)" % worst)


if __name__ == "__main__":
    main()
