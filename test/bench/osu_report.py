#!/usr/bin/python3
"""Medians and ratios of OSU runs made by osu.sh, as markdown, and a PNG plot.

usage: osu_report.py DIR CONFIGS BENCHES REPEATS
  DIR/raw/<bench>-<config>-<repeat>.txt are OSU outputs; CONFIGS and BENCHES are
  comma-separated. The first configuration is the reference of the ratio columns.
"""
import os
import re
import statistics
import sys

UNIT = {"osu_latency": "latency, us (lower is better)",
        "osu_bw": "bandwidth, MB/s (higher is better)",
        "osu_mbw_mr": "bandwidth, MB/s (higher is better)",
        "osu_put_latency": "latency, us (lower is better)",
        "osu_get_latency": "latency, us (lower is better)",
        "osu_acc_latency": "latency, us (lower is better)",
        "osu_fop_latency": "latency, us (lower is better)",
        "osu_cas_latency": "latency, us (lower is better)",
        "osu_put_bw": "bandwidth, MB/s (higher is better)",
        "osu_get_bw": "bandwidth, MB/s (higher is better)"}


def parse(path):
    """{size: value} from an OSU output: lines 'size value [more]'"""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(\d+)\s+([0-9.]+)", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    return out


def human(n):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def main():
    d, cfgs, benches, reps = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), int(sys.argv[4])
    ref = cfgs[0]
    med = {}  # (bench, cfg) -> {size: median}
    nruns = {}
    for b in benches:
        for c in cfgs:
            runs = [parse(os.path.join(d, "raw", f"{b}-{c}-{r}.txt")) for r in range(1, reps + 1)
                    if os.path.exists(os.path.join(d, "raw", f"{b}-{c}-{r}.txt"))]
            runs = [x for x in runs if x]
            nruns[(b, c)] = len(runs)
            sizes = sorted(set().union(*runs)) if runs else []
            med[(b, c)] = {s: statistics.median([x[s] for x in runs if s in x]) for s in sizes}

    notes = os.path.join(d, "notes.txt")
    if os.path.exists(notes) and open(notes).read().strip():
        print("Not measured:\n")
        for line in open(notes).read().strip().splitlines():
            print(f"- {line}")
        print()
    for b in benches:
        print(f"### {b}: median {UNIT.get(b, '')}\n")
        print("runs per configuration: " + ", ".join(f"{c} {nruns[(b, c)]}" for c in cfgs) + "\n")
        others = [c for c in cfgs if c != ref]
        head = ["size"] + cfgs + [f"{c}/{ref}" for c in others]
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---:" for _ in head) + "|")
        sizes = sorted(set().union(*[med[(b, c)].keys() for c in cfgs]))
        for s in sizes:
            row = [human(s)]
            for c in cfgs:
                v = med[(b, c)].get(s)
                row.append("-" if v is None else f"{v:.2f}")
            r0 = med[(b, ref)].get(s)
            for c in others:
                v = med[(b, c)].get(s)
                row.append("-" if v is None or not r0 else f"{v / r0:.2f}")
            print("| " + " | ".join(row) + " |")
        print()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    fig, axes = plt.subplots(1, len(benches), figsize=(6 * len(benches), 4.5), squeeze=False)
    for ax, b in zip(axes[0], benches):
        for c in cfgs:
            pts = sorted((s, v) for s, v in med[(b, c)].items() if s > 0)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=c)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size, bytes")
        ax.set_ylabel(UNIT.get(b, ""))
        ax.set_title(f"{b} (2 ranks, one node, median of {reps})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(d, "osu.png"), dpi=110)


if __name__ == "__main__":
    main()
