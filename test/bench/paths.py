#!/usr/bin/env python3
"""Summarises test/bench/paths.sh's raw lines: per benchmark and size, the
medians of xshm (the measured choice), xshmbounce and xshmscopy (each path
forced), and xshm's ratio to the better forced path, as a speed (above 1:
the choice beat both forced paths, below 1: it lost to one of them).

Raw lines: BENCH ROUND PROVIDER SIZE REP VALUE [...], VALUE in us for
latency (lower is better), MB/s otherwise."""
import statistics
import sys

PROVS = ("xshm", "xshmbounce", "xshmscopy")


def read(path):
    values = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6 or fields[2] not in PROVS:
                continue
            try:
                value = float(fields[5])
            except ValueError:
                continue
            key = (fields[0], int(fields[3]))
            values.setdefault(key, {}).setdefault(fields[2], []).append(value)
    return values


def speed(bench, value):
    """Higher is better for every benchmark."""
    return 1.0 / value if bench == "latency" else value


def main():
    values = read(sys.argv[1])
    bench_prev = None
    for (bench, size), by_prov in sorted(values.items()):
        if any(p not in by_prov for p in PROVS):
            continue
        med = {p: statistics.median(by_prov[p]) for p in PROVS}
        best = max(PROVS[1:], key=lambda p: speed(bench, med[p]))
        ratio = speed(bench, med["xshm"]) / speed(bench, med[best])
        if bench != bench_prev:
            unit = "us" if bench == "latency" else "MB/s"
            print("\n## %s (%s, medians of %d)" % (bench, unit, len(by_prov["xshm"])))
            print("%9s %10s %10s %10s   %s" % ("size", *PROVS, "auto / best forced"))
            bench_prev = bench
        print("%9d %10.2f %10.2f %10.2f   %.2f (%s)" %
              (size, med["xshm"], med["xshmbounce"], med["xshmscopy"], ratio,
               best[len("xshm"):]))


if __name__ == "__main__":
    main()
