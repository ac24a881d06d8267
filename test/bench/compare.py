#!/usr/bin/env python3
"""Compares two libfabric providers (default xshm and shm) side by side, on
Debian's libfabric 1.17 and on libfabric 2.6 (the anchors).

Run through test/bench/compare.sh, which builds first, finds or builds
libfabric 2.6 and sets FI_PROVIDER_PATH.  For each repetition it runs every
benchmark of test/bench/ once per anchor (the 2.6 run with LD_LIBRARY_PATH
set to its lib/), with both providers in the same processes: each program
measures every size for both providers back to back, alternating which goes
first, and the script alternates the order of the providers and of the
anchors between repetitions too.  The second provider is labelled with its
anchor (shm-1.17, shm-2.6); each ratio is first / second from the same
runs.  It prints, per benchmark and size and for each anchor, the median of
each provider, their ratio, the anchor's target where one applies and
whether it is met, and writes raw.csv, summary.csv (both with an anchor
column), floor.csv and one PNG per benchmark under the results
directory.  It also reports the shared memory each provider's endpoint maps
with 1 and with several peers (incast -M), and, from copy_floor run right
after latency in every repetition, what the copy alone takes at each size:
where xshm's latency drops against the next smaller size (a cliff), the
table says whether the machine's own copy drops there too, and at the large
sizes a second table sets xshm's and each shm's latency beside the best copy
method (target: xshm within FLOOR_TARGET of it).  From ring_floor,
run there as well, it prints what xshm's rings alone take at the small sizes,
against the second provider's latency in the same repetitions: the lowest
ratio a provider moving its messages through these rings could reach.
From stream_floor, likewise, the streaming bandwidth (stream) and the
ping-pong latency (pingpong) of two copies through shared slots, beside both
providers' bandwidth and latency: what a provider that copies twice, as both
do below the single copy's sizes, can reach.
The rma_*, atomic_* and cswap_* benchmarks are test/bench/rma's modes (RMA_MODES):
fi_write and fi_read, fetching and plain atomics; where a provider has no
atomics, the table says so below it.
"""
import argparse
import csv
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time

# $XSHM_BENCH_DIR: programs built elsewhere (test/bench/device.sh)
BENCH_DIR = os.environ.get("XSHM_BENCH_DIR") or os.path.dirname(os.path.abspath(__file__))
KIB, MIB = 1024, 1024 * 1024

# (low, high, bound): the ratio first/second must be <= bound (latency) or
# >= bound (throughput) for sizes low..high inclusive.
TARGETS = {
    "latency": [(8, 1 * KIB, 0.6), (4 * KIB, 4 * KIB, 0.9), (8 * KIB, 8 * KIB, 0.45),
                (16 * KIB, 16 * KIB, 0.6), (64 * KIB, 1 << 62, 1.0)],
    "bandwidth": [(8, 8, 3.0), (64, 1 * KIB, 2.0), (1 * MIB, 4 * MIB, 1.0)],
    "msgrate": [(8, 8, 3.0)],
    "incast": [],
    "loopback": [],
    "floor": [],
    "ring": [],
    "stream": [],
    "pingpong": [],
}
# test/bench/rma's modes, by benchmark name: RMA and atomics (issue 35).
RMA_MODES = {"rma_write_lat": "write_lat", "rma_read_lat": "read_lat",
             "rma_write_bw": "write_bw", "rma_read_bw": "read_bw",
             "atomic_lat": "atomic_lat", "atomic_rate": "atomic_rate",
             "atomic_add_rate": "atomic_add_rate", "cswap_lat": "cswap_lat",
             "cswap_rate": "cswap_rate"}
RMA_SIZES = "8,64,512,4K,32K,256K,1M,4M"
TARGETS.update({bench: [] for bench in RMA_MODES})
# Against libfabric 2.6's shm (issue 33; RMA and atomics: issue 35).
TARGETS_26 = {
    "latency": [(0, 1 << 62, 0.8)],
    "bandwidth": [(0, 1 << 62, 1.2)],
    "msgrate": [(8, 8, 1.5)],
    "incast": [(0, 1 << 62, 1.2)],
    "loopback": [],
    "floor": [],
    "ring": [],
    "stream": [],
    "pingpong": [],
    "rma_write_lat": [(0, 1 << 62, 0.8)],
    "rma_read_lat": [(0, 1 << 62, 0.8)],
    "rma_write_bw": [(0, 1 << 62, 1.2)],
    "rma_read_bw": [(0, 1 << 62, 1.2)],
    "atomic_lat": [(0, 1 << 62, 0.8)],
    "atomic_rate": [(0, 1 << 62, 1.2)],
    "atomic_add_rate": [(0, 1 << 62, 1.2)],
    "cswap_lat": [(0, 1 << 62, 0.8)],
    "cswap_rate": [(0, 1 << 62, 1.2)],
}
# 1.17: the libfabric the processes load (Debian's); 2.6: through LD_LIBRARY_PATH.
ANCHOR_TARGETS = {"1.17": TARGETS, "2.6": TARGETS_26}
NO_LIBFABRIC = ("floor", "ring", "stream", "pingpong")  # no provider: run once per repetition, not per anchor
FLOOR_TARGET = 1.3          # xshm's latency / the best copy method's, at most
FLOOR_TARGET_FROM = 64 * KIB
LOWER_IS_BETTER = {"latency": True, "bandwidth": False, "msgrate": False, "incast": False,
                   "loopback": True, "floor": True, "ring": True,
                   "stream": False, "pingpong": True}
UNITS = {"latency": "us", "bandwidth": "MB/s", "msgrate": "Mmsg/s", "incast": "MB/s",
         "loopback": "us", "floor": "us", "ring": "us", "stream": "MB/s",
         "pingpong": "us"}
for _bench, _mode in RMA_MODES.items():
    LOWER_IS_BETTER[_bench] = _mode.endswith("_lat")
    UNITS[_bench] = "us" if _mode.endswith("_lat") else \
        "MB/s" if _mode.endswith("_bw") else "Mop/s"
TITLES = {
    "latency": "tagged ping-pong latency, one way (us, lower is better)",
    "bandwidth": "tagged streaming bandwidth, window 64 (MB/s, higher is better)",
    "msgrate": "tagged message rate, window 64 (Mmsg/s, higher is better)",
    "incast": "incast, {n} senders to 1 receiver, aggregate (MB/s, higher is better)",
    "loopback": "a tagged message to itself, the provider's software alone (us per "
                "message, lower is better)",
    "floor": "the copy alone, no provider (copy_floor), one way (us); in parentheses "
             "B/us against the next smaller size",
    "ring": "xshm's rings alone, no provider (ring_floor), one way (us), beside the "
            "latency of both providers; ring/{b} and {a}-ring are medians of the "
            "per-repetition figures",
    "stream": "two copies through shared slots alone, no provider (stream_floor), "
              "streaming (MB/s), beside the bandwidth of both providers; {a}/stream "
              "and {b}/stream are medians of the per-repetition ratios",
    "pingpong": "two copies through a shared slot each way alone, no provider "
                "(stream_floor -l), one way (us), beside the latency of both "
                "providers; {a}/floor and {b}/floor are medians of the "
                "per-repetition ratios",
    "rma_write_lat": "fi_write, one at a time, each waited for (us per operation, lower "
                     "is better)",
    "rma_read_lat": "fi_read, one at a time, each waited for (us per operation, lower "
                    "is better)",
    "rma_write_bw": "fi_write, window 64 (MB/s, higher is better)",
    "rma_read_bw": "fi_read, window 64 (MB/s, higher is better)",
    "atomic_lat": "fi_fetch_atomic FI_SUM of size/8 uint64s, one at a time (us per "
                  "operation, lower is better)",
    "atomic_rate": "fi_fetch_atomic FI_SUM of size/8 uint64s, window 64 (Mop/s, higher "
                   "is better)",
    "atomic_add_rate": "fi_atomic FI_SUM of size/8 uint64s, window 64 (Mop/s, higher "
                       "is better)",
    "cswap_lat": "fi_compare_atomic FI_CSWAP of size/8 uint64s, one at a time (us per "
                 "operation, lower is better)",
    "cswap_rate": "fi_compare_atomic FI_CSWAP of size/8 uint64s, window 64 (Mop/s, "
                  "higher is better)",
}
FLOOR_METHODS = ("memcpy", "memcpy-split", "cma", "cma-split")
FLOOR_SIZES = "64K:4M"
FLOOR_REF = "memcpy"     # one copy by one process: no transport does less
RING_SIZES = "8,64,256,512,1K"  # where the latency target is 0.6
STREAM_SIZES = "64,1K,4K,16K,64K"  # stream_floor's: at most 64 KiB
CLIFF = 0.9     # bytes/us below this times the next smaller size's
MEM_LIMIT_KIB = 4 * 1024


def fmt_size(s):
    if s >= MIB and s % MIB == 0:
        return "%dM" % (s // MIB)
    if s >= KIB and s % KIB == 0:
        return "%dK" % (s // KIB)
    return str(s)


def fmt_ratio(v):
    return "%.2f" % v if v is not None else "-"


def fmt_val(v):
    if v is None:
        return "-"
    if v >= 1000:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.3f" % v


def target_for(bench, size, anchor="1.17"):
    for lo, hi, bound in ANCHOR_TARGETS[anchor][bench]:
        if lo <= size <= hi:
            return bound
    return None


class Runner:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.unsupported = set()    # (bench, anchor, provider)

    def run(self, argv, what, env=None):
        """Runs one benchmark program; returns its stdout lines, or None."""
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True, env=env)
        except OSError as e:
            self.failures.append("%s: %s" % (what, e))
            return None
        try:
            out, err = p.communicate(timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            msg = "%s: no result after %d s (hang?): %s" % (what, self.args.timeout,
                                                           shlex.join(argv))
            self.failures.append(msg)
            print("  FAILED " + msg, file=sys.stderr)
            return None
        if p.returncode != 0:
            msg = "%s: exit status %d: %s: %s" % (what, p.returncode, shlex.join(argv),
                                                  err.strip().replace("\n", " / "))
            self.failures.append(msg)
            print("  FAILED " + msg, file=sys.stderr)
            return None
        return [l for l in out.splitlines() if l and not l.startswith("#")]


def shm_label(args, anchor):
    """The second provider as it ran on anchor, e.g. shm-2.6."""
    return "%s-%s" % (args.provs[1], anchor)


def in_anchor(row, anchor):
    """Whether a raw row belongs to anchor's view: its own rows and those of
    the programs that use no provider (ring, floor)."""
    return row.get("anchor", "") in ("", anchor)


def anchor_env(args, anchor):
    """The environment of a run on anchor (None: this process's)."""
    if anchor != "2.6":
        return None
    lib = os.path.join(args.libfabric_26, "lib")
    old = os.environ.get("LD_LIBRARY_PATH")
    return dict(os.environ, LD_LIBRARY_PATH=lib + (":" + old if old else ""))


def libfabric_version(env):
    """The version of the libfabric fi_info loads in env, or "?"."""
    try:
        out = subprocess.run(["fi_info", "--version"], env=env, capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    for line in out.splitlines():
        if line.startswith("libfabric:"):
            return line.split()[1]
    return "?"


def choose_anchors(ap, args):
    """The anchors asked for that can run; 2.6 without its library is said and
    left out (an error when it is the only one)."""
    anchors = args.anchors.split(",")
    for anchor in anchors:
        if anchor not in ANCHOR_TARGETS:
            ap.error("unknown anchor %s (known: %s)" % (anchor, ",".join(ANCHOR_TARGETS)))
    lib = os.path.join(args.libfabric_26, "lib", "libfabric.so.1")
    if "2.6" in anchors and not os.path.exists(lib):
        why = "no libfabric 2.6 at %s (--libfabric-26, XSHM_LIBFABRIC_26, or " \
              "test/thirdparty.sh libfabric-2.6 builds it)" % args.libfabric_26
        if anchors == ["2.6"]:
            ap.error(why)
        anchors.remove("2.6")
        print("# WARNING: %s: comparing against libfabric 1.17 only" % why)
        if not sys.stdout.isatty():
            print("WARNING: %s: comparing against libfabric 1.17 only" % why,
                  file=sys.stderr)
    return anchors


def print_anchors(args):
    """One header line per anchor: the libfabric its runs load."""
    for anchor in args.anchors:
        env = anchor_env(args, anchor)
        where = "LD_LIBRARY_PATH=%s" % env["LD_LIBRARY_PATH"] if env else \
            "as loaded by default"
        version = libfabric_version(env)
        print("# %s: %s on libfabric %s (%s)%s" % (
            shm_label(args, anchor), args.provs[1], version, where,
            "" if version.startswith(anchor) else "  WARNING: not " + anchor))


def offset_flags(args):
    """-O where asked for: each receive buffer that many bytes into its page."""
    return [] if args.rx_offset is None else ["-O", str(args.rx_offset)]


def buffer_flags(args):
    """What every program, copy_floor too, does to its message buffers."""
    return [flag for flag, on in (("-H", args.huge), ("-W", args.rewrite),
                                  ("-R", args.read)) if on] + offset_flags(args)


def floor_argv(args):
    return [os.path.join(BENCH_DIR, "copy_floor"), "-r", "1", "-s",
            args.sizes or FLOOR_SIZES] + buffer_flags(args)


def ring_argv(args):
    return [os.path.join(BENCH_DIR, "ring_floor"), "-r", "1", "-s", args.ring_sizes]


def stream_argv(args, pingpong=False):
    return [os.path.join(BENCH_DIR, "stream_floor"), "-r", "1", "-s",
            args.stream_sizes] + (["-l"] if pingpong else [])


def rma_argv(args, bench, provs):
    """test/bench/rma in the mode of bench: -H and -O but neither -W nor -R,
    which are about messages; the atomics at their default size (one uint64)."""
    mode = RMA_MODES[bench]
    argv = [os.path.join(BENCH_DIR, "rma"), "-m", mode, "-p", ",".join(provs), "-r", "1",
            "-t", str(args.max_point_ms)]
    argv += [flag for flag, on in (("-y", args.yield_cpu), ("-a", args.mean),
                                   ("-b", args.bind), ("-H", args.huge)) if on]
    argv += offset_flags(args)
    if not mode.startswith(("atomic", "cswap")):
        argv += ["-s", args.rma_sizes]
    if args.rma_delivery:
        argv.append("-D")
    return argv


def bench_argv(args, bench, provs):
    if bench == "floor":
        return floor_argv(args)
    if bench == "ring":
        return ring_argv(args)
    if bench in ("stream", "pingpong"):
        return stream_argv(args, bench == "pingpong")
    if bench in RMA_MODES:
        return rma_argv(args, bench, provs)
    argv = [os.path.join(BENCH_DIR, bench), "-p", ",".join(provs), "-r", "1",
            "-t", str(args.max_point_ms)]
    if args.yield_cpu:
        argv.append("-y")
    if args.mean:
        argv.append("-a")
    if args.bind and bench != "incast":
        argv.append("-b")
    argv += buffer_flags(args)
    if bench in ("latency", "bandwidth") and args.sizes:
        argv += ["-s", args.sizes]
    if bench == "incast":
        argv += ["-n", str(args.senders)]
        if args.incast_sizes:
            argv += ["-s", args.incast_sizes]
    return argv


def measure(args, runner, benches, raw):
    start = time.time()
    for rep in range(args.reps):
        provs = args.provs if rep % 2 == 0 else args.provs[::-1]
        anchors = args.anchors if rep % 2 == 0 else args.anchors[::-1]
        print("repetition %d/%d (libfabric %s first, %s first, %.0f s so far)" %
              (rep + 1, args.reps, anchors[0], provs[0], time.time() - start),
              file=sys.stderr)
        for bench in benches:
            for anchor in [""] if bench in NO_LIBFABRIC else anchors:
                what = "%s on %s" % (bench, anchor) if anchor else bench
                lines = runner.run(bench_argv(args, bench, provs), what,
                                   anchor_env(args, anchor))
                for line in lines or []:
                    f = line.split()
                    if f[3] == "unsupported":
                        runner.unsupported.add((bench, anchor, f[0]))
                        continue
                    raw.append({"bench": bench, "anchor": anchor, "provider": f[0],
                                "size": int(f[1]), "rep": rep, "value": float(f[3]),
                                "unit": UNITS[bench]})
    return time.time() - start


def by_size_and_rep(raw, benches, anchor=""):
    """{size: {rep: {provider: value}}} of the rows of benches in anchor's view."""
    out = {}
    for r in raw:
        if r["bench"] in benches and in_anchor(r, anchor):
            out.setdefault(r["size"], {}).setdefault(r["rep"], {})[r["provider"]] = r["value"]
    return out


def summarize(args, bench, raw, anchor="1.17"):
    a, b = args.provs
    by_rep = by_size_and_rep(raw, (bench,), anchor)
    rows, prev = [], {}
    for size in sorted(by_rep):
        vals = {p: [v[p] for v in by_rep[size].values() if p in v] for p in (a, b)}
        med = {p: statistics.median(vals[p]) if vals[p] else None for p in (a, b)}
        ratio = med[a] / med[b] if med[a] and med[b] else None
        # Both providers of one repetition ran back to back in one process
        # pair, so in the same core placement: the median of their ratios
        # holds still when the placement drifts between repetitions.
        pairs = [v[a] / v[b] for v in by_rep[size].values() if v.get(a) and v.get(b)]
        pair_ratio = statistics.median(pairs) if pairs else None
        bound = target_for(bench, size, anchor)
        met = None
        if bound is not None and ratio is not None:
            met = ratio <= bound if LOWER_IS_BETTER[bench] else ratio >= bound
        # bytes per microsecond of the first provider, against the next smaller size
        step = {a: None, b: None}
        for p in (a, b):
            if bench in ("latency", "bandwidth") and med[p]:
                bpus = size / med[p] if bench == "latency" else med[p]
                if p in prev:
                    step[p] = bpus / prev[p]
                prev[p] = bpus
        rows.append({"bench": bench, "anchor": anchor, "size": size,
                     "n": min(len(vals[p]) for p in (a, b)),
                     "median_" + a: med[a], "median_" + b: med[b], "ratio": ratio,
                     "pair_ratio": pair_ratio, "target": bound, "met": met, "step_" + a: step[a],
                     "step_" + b: step[b]})
    return rows


def summarize_floor(raw):
    """{method: [(size, median us, B/us against the next smaller size)]}"""
    out = {}
    for m in FLOOR_METHODS:
        vals = {}
        for r in raw:
            if r["bench"] == "floor" and r["provider"] == "floor-" + m:
                vals.setdefault(r["size"], []).append(r["value"])
        rows, prev = [], None
        for size in sorted(vals):
            med = statistics.median(vals[size])
            bpus = size / med
            rows.append((size, med, bpus / prev if prev else None))
            prev = bpus
        out[m] = rows
    return out


def print_floor(floor):
    print("\n## floor: %s" % TITLES["floor"])
    print("%8s" % "size" + "".join("%22s" % m for m in FLOOR_METHODS))
    sizes = sorted({size for rows in floor.values() for size, _, _ in rows})
    for size in sizes:
        line = "%8s" % fmt_size(size)
        for m in FLOOR_METHODS:
            row = [r for r in floor[m] if r[0] == size]
            line += "%22s" % ("%s (%s)" % (fmt_val(row[0][1]), fmt_ratio(row[0][2]))
                              if row else "-")
        print(line)


def floor_step(floor, size):
    """The step of FLOOR_REF at size, or None."""
    for s, _, step in floor.get(FLOOR_REF, []):
        if s == size:
            return step
    return None


def floor_rows(args, floor, latency):
    """At each floor size and for each anchor, the best copy method beside both
    providers' latency (latency: {anchor: summarize's rows}), the first's
    ratio to the best and FLOOR_TARGET from FLOOR_TARGET_FROM up."""
    a, b = args.provs
    best, cma = {}, {}
    for method, rows in floor.items():
        for size, us, _ in rows:
            if size not in best or us < best[size][1]:
                best[size] = (method, us)
            if method.startswith("cma") and (size not in cma or us < cma[size][1]):
                cma[size] = (method, us)
    out = []
    for anchor, lat_rows in latency.items():
        lat = {r["size"]: r for r in lat_rows}
        for size in sorted(best):
            method, us = best[size]
            r = lat.get(size, {})
            ratio = r["median_" + a] / us if r.get("median_" + a) else None
            bound = FLOOR_TARGET if size >= FLOOR_TARGET_FROM else None
            met = ratio <= bound if None not in (ratio, bound) else None
            cma_us = cma.get(size, (None, None))[1]
            out.append({"anchor": anchor, "size": size, "best_method": method,
                        "best_us": us, "cma_us": cma_us,
                        "cma_ratio": r["median_" + a] / cma_us
                        if r.get("median_" + a) and cma_us else None,
                        "median_" + a: r.get("median_" + a),
                        "median_" + b: r.get("median_" + b), "ratio": ratio,
                        "target": bound, "met": met})
    return out


def print_floor_latency(args, rows, anchors):
    """floor_rows' rows, one line per size, each anchor's columns side by side."""
    a, b = args.provs
    print("\n## floor vs latency: the best copy method (copy_floor) beside the latency "
          "on each libfabric, one way (us); ratio = %s / best, target <= %.2f from %s"
          % (a, FLOOR_TARGET, fmt_size(FLOOR_TARGET_FROM)))
    print("# best CMA: the best of the methods a provider without xpmem can use; "
          "/cma = %s / best CMA" % a)
    head = "%8s %24s %9s" % ("size", "best (method)", "best CMA")
    for anchor in anchors:
        head += " | %10s %10s %7s %4s %5s" % (a, shm_label(args, anchor), "ratio", "ok",
                                              "/cma")
    print(head)
    for size in sorted({r["size"] for r in rows}):
        at = {r["anchor"]: r for r in rows if r["size"] == size}
        first = at[anchors[0]]
        line = "%8s %24s %9s" % (fmt_size(size), "%s (%s)" % (fmt_val(first["best_us"]),
                                                              first["best_method"]),
                                 fmt_val(first.get("cma_us")))
        for anchor in anchors:
            r = at[anchor]
            ok = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
            line += " | %10s %10s %7s %4s %5s" % (fmt_val(r["median_" + a]),
                                                  fmt_val(r["median_" + b]),
                                                  fmt_ratio(r["ratio"]), ok,
                                                  fmt_ratio(r.get("cma_ratio")))
        print(line)


def ring_cells(args, reps, floor):
    """One anchor's columns of the ring table at one size, from {rep: {name: value}}."""
    a, b = args.provs
    vals = {n: [v[n] for v in reps if n in v] for n in (a, b)}
    med = {n: statistics.median(x) if x else None for n, x in vals.items()}
    ratios = [v[floor] / v[b] for v in reps if v.get(floor) and v.get(b)]
    extra = [(v[a] - v[floor]) * 1000 for v in reps if floor in v and a in v]
    return " | %10s %10s %13s %12s" % (
        fmt_val(med[a]), fmt_val(med[b]),
        fmt_ratio(statistics.median(ratios) if ratios else None),
        "%.0f" % statistics.median(extra) if extra else "-")


def ratio_cells(args, reps, floor):
    """One anchor's columns of a two-copy floor's table at one size: both
    providers' figures and each one's ratio to the floor."""
    a, b = args.provs
    line = ""
    for n in (a, b):
        vals = [v[n] for v in reps if n in v]
        line += " %10s" % fmt_val(statistics.median(vals) if vals else None)
    for n in (a, b):
        ratios = [v[n] / v[floor] for v in reps if v.get(floor) and n in v]
        line += " %12s" % fmt_ratio(statistics.median(ratios) if ratios else None)
    return " |" + line


# floor program: (the benchmark its rows sit beside, the heads of each
# anchor's columns, their format, the function that fills them)
BESIDE = {
    "ring": ("latency", lambda a, shm: (a, shm, "ring/" + shm, "%s-ring ns" % a),
             " | %10s %10s %13s %12s", ring_cells),
    "stream": ("bandwidth", lambda a, shm: (a, shm, a + "/stream", shm + "/stream"),
               " | %10s %10s %12s %12s", ratio_cells),
    "pingpong": ("latency", lambda a, shm: (a, shm, a + "/floor", shm + "/floor"),
                 " | %10s %10s %12s %12s", ratio_cells),
}


def print_beside(args, raw, floor):
    """A floor program's medians (ring_floor's or stream_floor's) beside both
    providers' figures of the benchmark it bounds on each anchor, at its
    sizes, each ratio the median over the repetitions that measured both."""
    a, b = args.provs
    bench, heads, head_format, cells = BESIDE[floor]
    views = {anchor: by_size_and_rep(raw, (floor, bench), anchor)
             for anchor in args.anchors}
    print("\n## %s: %s" % (floor, TITLES[floor].format(a=a, b=b)))
    head = "%8s %10s" % ("size", floor)
    for anchor in args.anchors:
        head += head_format % heads(a, shm_label(args, anchor))
    print(head)
    rows = by_size_and_rep(raw, (floor,))
    for size in sorted(rows):
        vals = [v[floor] for v in rows[size].values()]
        line = "%8s %10s" % (fmt_size(size), fmt_val(statistics.median(vals)))
        for anchor in args.anchors:
            line += cells(args, views[anchor].get(size, {}).values(), floor)
        print(line)


def table_cells(args, bench, r):
    """One anchor's columns of a benchmark table: medians, ratios, target, ok."""
    a, b = args.provs
    if r is None:
        return " | %10s %10s %7s %7s %8s %4s" % (("-",) * 6)
    better = "<=" if LOWER_IS_BETTER[bench] else ">="
    tgt = "%s%.2f" % (better, r["target"]) if r["target"] is not None else "-"
    ok = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
    return " | %10s %10s %7s %7s %8s %4s" % (
        fmt_val(r["median_" + a]), fmt_val(r["median_" + b]), fmt_ratio(r["ratio"]),
        fmt_ratio(r["pair_ratio"]), tgt, ok)


def step_cells(args, rows):
    """The first anchor's first provider's B/us step, each anchor's second's,
    and CLIFF where the first's is below CLIFF."""
    a, b = args.provs
    first = rows[0]
    if first is None or first["step_" + a] is None:
        return ""
    seconds = " ".join(fmt_ratio(r["step_" + b]) if r else "-" for r in rows)
    cliff = "  CLIFF (< %.1f)" % CLIFF if first["step_" + a] < CLIFF else ""
    return " | %s (%s)%s" % (fmt_ratio(first["step_" + a]), seconds, cliff)


def print_table(args, bench, tables):
    """tables: {anchor: summarize's rows}; one line per size, each anchor's
    columns side by side."""
    a = args.provs[0]
    anchors = list(tables)
    print("\n## %s: %s" % (bench, TITLES[bench].format(n=args.senders)))
    head = "%8s" % "size"
    for anchor in anchors:
        head += " | %10s %10s %7s %7s %8s %4s" % (a, shm_label(args, anchor), "ratio",
                                                  "pairs", "target", "ok")
    if bench in ("latency", "bandwidth"):
        head += " | B/us vs previous size: %s on %s (%s)" % (
            a, anchors[0], " ".join(shm_label(args, x) for x in anchors))
    print(head)
    by_size = {}
    for anchor in anchors:
        for r in tables[anchor]:
            by_size.setdefault(r["size"], {})[anchor] = r
    for size in sorted(by_size):
        rows = [by_size[size].get(anchor) for anchor in anchors]
        print("%8s" % fmt_size(size) + "".join(table_cells(args, bench, r) for r in rows)
              + step_cells(args, rows))


# A repetition met the far placement when the reference provider's latency at
# the smallest size, its first point, was over FAR_FACTOR times its best
# repetition's.  The placement can change later in the repetition.
FAR_FACTOR = 2.0
MIN_REPS_PER_PLACEMENT = 5


def placements(args, raw, anchor=""):
    """The latency repetitions on anchor split into (near, far) by the core
    placement they met, judged by the second provider, the reference; None
    when fewer than MIN_REPS_PER_PLACEMENT repetitions fall on either side."""
    ref = args.provs[1]
    lat = [r for r in raw if r["bench"] == "latency" and r["provider"] == ref and
           in_anchor(r, anchor)]
    if not lat:
        return None
    smallest = min(r["size"] for r in lat)
    probe = {r["rep"]: r["value"] for r in lat if r["size"] == smallest}
    best = min(probe.values())
    far = {rep for rep, v in probe.items() if v > FAR_FACTOR * best}
    near = set(probe) - far
    if min(len(near), len(far)) < MIN_REPS_PER_PLACEMENT:
        return None
    return near, far


def print_placements(args, raw, anchor):
    """Latency medians and ratios on anchor of each placement on its own."""
    split = placements(args, raw, anchor)
    if split is None:
        return
    a, b = args.provs
    names = ("near", "far")
    tables = [{row["size"]: row for row in
               summarize(args, "latency", [r for r in raw if r["rep"] in reps], anchor)}
              for reps in split]
    print("\n## latency on libfabric %s by core placement: a repetition met the far one "
          "when %s's latency at the smallest size was over %.0f times its best (near %d, "
          "far %d repetitions)" % (anchor, shm_label(args, anchor), FAR_FACTOR,
                                   len(split[0]), len(split[1])))
    print("%8s" % "size" + "".join("%10s %10s %7s" % ("%s %s" % (g, a), "%s %s" % (g, b),
                                                       "ratio") for g in names))
    for size in sorted(set(tables[0]) | set(tables[1])):
        line = "%8s" % fmt_size(size)
        for table in tables:
            row = table.get(size, {})
            line += "%10s %10s %7s" % (fmt_val(row.get("median_" + a)),
                                       fmt_val(row.get("median_" + b)),
                                       fmt_ratio(row.get("ratio")))
        print(line)


def plot(args, bench, tables, raw, path):
    """tables: {anchor: summarize's rows}: medians above, ratios below, one
    line style per anchor."""
    import matplotlib
    import matplotlib.ticker
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a, b = args.provs
    fig, (top, bot) = plt.subplots(2, 1, figsize=(9, 7),
                                   sharex=max(len(t) for t in tables.values()) > 1,
                                   gridspec_kw={"height_ratios": [3, 2]})
    shm_colours = ("tab:orange", "tab:green")
    for i, (anchor, rows) in enumerate(tables.items()):
        sizes = [r["size"] for r in rows]
        style = ("o-", "s--")[i]
        for p, label, colour in ((a, "%s on %s" % (a, anchor), "tab:blue"),
                                 (b, shm_label(args, anchor), shm_colours[i])):
            pts = [(r["size"], r["value"]) for r in raw if r["bench"] == bench and
                   r["provider"] == p and r.get("anchor") == anchor]
            if pts:
                top.scatter(*zip(*pts), s=6, alpha=0.25, color=colour)
            top.plot(sizes, [r["median_" + p] for r in rows], style, ms=3, color=colour,
                     label="%s (median)" % label)
        bot.plot(sizes, [r["ratio"] for r in rows], style, ms=3, color="black",
                 label="%s / %s" % (a, shm_label(args, anchor)))
        tgt = [(r["size"], r["target"]) for r in rows if r["target"] is not None]
        if tgt:
            bot.scatter(*zip(*tgt), marker="_", s=200, color=("red", "purple")[i],
                        label="target against %s" % shm_label(args, anchor))
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel(UNITS[bench])
    top.set_title(TITLES[bench].format(n=args.senders))
    top.grid(True, which="both", alpha=0.3)
    top.legend()
    bot.axhline(1.0, color="grey", lw=0.8)
    bot.set_xscale("log", base=2)
    bot.set_yscale("log")
    bot.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    bot.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.1f"))
    bot.set_xlabel("message size (bytes)")
    bot.set_ylabel("ratio %s / %s" % (a, b))
    bot.grid(True, which="both", alpha=0.3)
    bot.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def memory_runs(args):
    """(label, provider, anchor) of the memory report: the first provider on the
    first anchor, the second on every anchor."""
    a, b = args.provs
    return [(a, a, args.anchors[0])] + [(shm_label(args, x), b, x) for x in args.anchors]


def memory(args, runner):
    """incast -M: what rank 0 (the receiver, n peers) and rank 1 (a sender) map."""
    rows = []
    runs = memory_runs(args)
    for n in args.mem_peers:
        for label, p, anchor in runs:
            argv = [os.path.join(BENCH_DIR, "incast"), "-M", "-p", p, "-n", str(n),
                    "-s", "8,4K,64K,1M"]
            for line in runner.run(argv, "memory %s %d peers" % (label, n),
                                   anchor_env(args, anchor)) or []:
                f = line.split()
                if f[0] == "mem" and int(f[2]) <= 1:
                    rows.append({"provider": label, "n": n, "rank": int(f[2]),
                                 "peers": int(f[3]),
                                 "own_kib": int(f[4]), "own_rss_kib": int(f[5]),
                                 "all_kib": int(f[6]), "all_rss_kib": int(f[7]),
                                 "mappings": int(f[8])})
    print("\n## memory: shared memory mapped by one process, KiB (own: the files it "
          "created, as mapped now;\n## all: own and peers'; mappings: count)")
    print("%8s %5s | %-30s | %-24s | %s" % ("", "", "receiver (rank 0, n peers)",
                                           "a sender (rank 1)", ""))
    print("%8s %5s | %7s %7s %7s %6s | %7s %7s %8s | %s" % (
        "provider", "n", "own", "own_rss", "all", "maps", "own", "all", "maps",
        "own <= 4 MiB and not growing"))
    base = {}
    for p, _, _ in runs:
        for n in args.mem_peers:
            rx = [r for r in rows if r["provider"] == p and r["peers"] == n and r["rank"] == 0]
            tx = [r for r in rows if r["provider"] == p and r["n"] == n and r["rank"] == 1]
            if not rx or not tx:
                continue
            rx, tx = rx[0], tx[0]
            base.setdefault(p, rx["own_kib"])
            ok = max(rx["own_kib"], tx["own_kib"]) <= MEM_LIMIT_KIB and \
                rx["own_kib"] <= base[p]
            print("%8s %5d | %7d %7d %7d %6d | %7d %7d %8d | %s" % (
                p, n, rx["own_kib"], rx["own_rss_kib"], rx["all_kib"], rx["mappings"],
                tx["own_kib"], tx["all_kib"], tx["mappings"], "yes" if ok else "NO"))
    return rows


def cliffs_of(args, bench, rows, floor):
    """The first provider's cliffs in rows, each with the copy alone's step there."""
    out = []
    for r in rows:
        st = r["step_" + args.provs[0]]
        if st is None or st >= CLIFF:
            continue
        cliff = "%s at %s (%.2f" % (bench, fmt_size(r["size"]), st)
        fst = floor_step(floor, r["size"]) if bench == "latency" else None
        if fst is not None:
            cliff += "; the copy alone: %.2f%s" % (fst, ", a cliff too" if fst < CLIFF else "")
        out.append(cliff + ")")
    return out


def print_unsupported(args, bench, unsupported):
    """Which provider on which anchor printed 'unsupported' for bench."""
    who = sorted(shm_label(args, anchor) if prov == args.provs[1] else
                 "%s on %s" % (prov, anchor)
                 for b, anchor, prov in unsupported if b == bench)
    if who:
        print("# %s: not supported by %s" % (bench, ", ".join(who)))


def report(args, timed, raw, out, unsupported=()):
    """Prints the tables of the timed benchmarks in their order and plots
    them; returns (summary rows, floor vs latency rows, cliffs).
    unsupported: (bench, anchor, provider) that printed 'unsupported'."""
    floor = summarize_floor(raw)
    tables = {bench: {x: summarize(args, bench, raw, x) for x in args.anchors}
              for bench in timed if bench not in NO_LIBFABRIC}
    no_latency = {x: [] for x in args.anchors}
    floor_lat = floor_rows(args, floor, tables.get("latency", no_latency)) \
        if "floor" in timed else []
    summary, cliffs = [], []
    for bench in timed:
        if bench == "floor":
            print_floor(floor)
            print_floor_latency(args, floor_lat, args.anchors)
        elif bench in BESIDE:
            print_beside(args, raw, bench)
        elif any(tables[bench].values()):
            print_table(args, bench, tables[bench])
            summary += [r for rows in tables[bench].values() for r in rows]
            cliffs += cliffs_of(args, bench, tables[bench][args.anchors[0]], floor)
            try:
                plot(args, bench, tables[bench], raw, os.path.join(out, bench + ".png"))
            except ImportError as e:
                print("# no plot (%s): install python3-matplotlib" % e)
        if bench in RMA_MODES:
            print_unsupported(args, bench, unsupported)
    for anchor in args.anchors:
        print_placements(args, raw, anchor)
    return summary, floor_lat, cliffs


def targets_met(args, rows):
    """'M of N against ...' for each anchor, from rows with anchor and met."""
    parts = []
    for anchor in args.anchors:
        met = [r["met"] for r in rows if r["anchor"] == anchor and r["met"] is not None]
        parts.append("%d of %d against %s" % (sum(met), len(met), shm_label(args, anchor)))
    return ", ".join(parts)


def write_csv(path, rows):
    if not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-r", "--reps", type=int, default=40,
                    help="repetitions of every benchmark (default 40: a few minutes "
                    "per libfabric)")
    ap.add_argument("-o", "--out", help="results directory (default "
                    "bench-results/<date-time>)")
    ap.add_argument("-b", "--bench",
                    default="latency,loopback,ring,pingpong,floor,bandwidth,stream,msgrate,"
                    "incast,"
                    "rma_write_lat,rma_read_lat,rma_write_bw,rma_read_bw,atomic_lat,"
                    "atomic_rate,memory",
                    help="benchmarks to run (default all but atomic_add_rate, cswap_lat "
                    "and cswap_rate: "
                    "latency,loopback,ring,pingpong,floor,bandwidth,stream,msgrate,incast,"
                    "rma_write_lat,"
                    "rma_read_lat,rma_write_bw,rma_read_bw,atomic_lat,atomic_rate,memory); "
                    "loopback is a message to itself, each provider's software alone, "
                    "at 8, 64 and 1K; ring "
                    "is ring_floor, xshm's rings alone, at --ring-sizes; stream is "
                    "stream_floor, two copies through shared slots alone, at "
                    "--stream-sizes, and pingpong its latency (-l); floor is "
                    "copy_floor, the copy alone, at the latency sizes (default %s); "
                    "rma_*, atomic_* and cswap_* are test/bench/rma's modes "
                    "(atomic_add_rate: fi_atomic without fetch; cswap_*: "
                    "fi_compare_atomic), where a provider without atomics is "
                    "said to be so" % FLOOR_SIZES)
    ap.add_argument("-p", "--provs", default="xshm,shm",
                    help="the two providers; ratio = first / second (default xshm,shm)")
    ap.add_argument("--anchors", default="1.17,2.6",
                    help="the libfabrics to run on: 1.17 (the one the processes load, "
                    "Debian's), 2.6 (through LD_LIBRARY_PATH) or both (default 1.17,2.6)")
    ap.add_argument("--libfabric-26", default=os.environ.get("XSHM_LIBFABRIC_26") or
                    os.path.normpath(os.path.join(BENCH_DIR, "..", "..", "build",
                                                  "libfabric-2.6")),
                    help="libfabric 2.6's install prefix (default $XSHM_LIBFABRIC_26, "
                    "else build/libfabric-2.6)")
    ap.add_argument("-s", "--sizes", help="latency and bandwidth sizes, as the "
                    "programs' -s (default 1 B to 4 MiB and the thresholds)")
    ap.add_argument("--ring-sizes", default=RING_SIZES,
                    help="ring_floor's sizes, at most one cell's (default %s)" %
                    RING_SIZES)
    ap.add_argument("--stream-sizes", default=STREAM_SIZES,
                    help="stream_floor's sizes (stream, pingpong), at most 64 KiB "
                    "(default %s)" %
                    STREAM_SIZES)
    ap.add_argument("--rma-sizes", default=RMA_SIZES,
                    help="sizes of rma_write_* and rma_read_* (default %s); the atomics "
                    "take one uint64" % RMA_SIZES)
    ap.add_argument("--rma-delivery", action="store_true",
                    help="RMA and atomics asked for FI_DELIVERY_COMPLETE (rma -D), as "
                    "Open MPI's OFI BTL asks them; Debian's shm 1.17 completes no such "
                    "write, so with --anchors 2.6")
    ap.add_argument("--incast-sizes", help="incast sizes (default 8,256,4K,16K,64K,1M)")
    ap.add_argument("-n", "--senders", type=int, default=4,
                    help="incast senders (default 4)")
    ap.add_argument("--mem-peers", default="1,4,8",
                    help="peer counts for the memory report (default 1,4,8)")
    ap.add_argument("-t", "--max-point-ms", type=int, default=200,
                    help="a point ends early after this long (default 200)")
    ap.add_argument("-y", "--yield-cpu", action="store_true",
                    help="the programs yield the CPU when idle (for a crowded machine)")
    ap.add_argument("-a", "--mean", action="store_true",
                    help="each point's value from its whole duration, not from its "
                    "median block (8 round trips, or one window)")
    ap.add_argument("--no-bind", dest="bind", action="store_false",
                    help="do not bind the two processes of latency, bandwidth, "
                    "msgrate and rma to different CPUs")
    ap.add_argument("-H", "--huge-pages", dest="huge", action="store_true",
                    help="message buffers on transparent huge pages (as where THP "
                    "is 'always'); the single-copy protocol's cost depends on it")
    ap.add_argument("-W", "--rewrite", action="store_true",
                    help="the sender writes its buffer before every send, as an "
                    "application computing its data does (a stream's sends in "
                    "flight each have their own); without it, a single-copy pull "
                    "finds the unchanged data in the receiver's cache")
    ap.add_argument("-R", "--read", action="store_true",
                    help="the receiver reads its buffer after every receive, as an "
                    "application using the data does; without it, what a copy "
                    "left in the sender's cache is never paid for")
    ap.add_argument("-O", "--rx-offset", type=int, metavar="BYTES",
                    help="each receive buffer BYTES into its page, each send buffer "
                    "at the start of one, as buffers malloc'd one after the other "
                    "lie (16: the kernel's single copy, and glibc's memcpy, went "
                    "4 to 5 times slower on the AMD guest; default: malloc's)")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds before one program run counts as hung (default 300)")
    args = ap.parse_args()
    args.provs = args.provs.split(",")
    if len(args.provs) != 2:
        ap.error("--provs takes two providers")
    args.mem_peers = [int(n) for n in args.mem_peers.split(",")]
    benches = args.bench.split(",")
    for bench in benches:
        if bench not in TARGETS and bench != "memory":
            ap.error("unknown benchmark %s" % bench)
    command = os.environ.get("XSHM_BENCH_COMMAND") or shlex.join(sys.argv)
    print("# command: %s" % command)
    args.anchors = choose_anchors(ap, args)
    out = args.out or os.path.join("bench-results", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)

    print("# %s, %d CPUs, load average %s, FI_PROVIDER_PATH=%s" % (
        time.strftime("%Y-%m-%d %H:%M:%S"), os.cpu_count(),
        " ".join("%.2f" % x for x in os.getloadavg()), os.environ.get("FI_PROVIDER_PATH")))
    if os.getloadavg()[0] > os.cpu_count():
        print("# WARNING: load average above the number of CPUs: other work competes "
              "with the benchmarks' busy polling; consider -y or a quieter moment")
    print_anchors(args)
    print("# medians of %d repetitions; ratio = %s / %s of the medians, pairs = median "
          "of the per-repetition ratios; every point of every repetition measures both "
          "providers back to back" % (args.reps, *args.provs))
    sys.stdout.flush()

    runner = Runner(args)
    raw = []
    timed = [b for b in benches if b != "memory"]
    elapsed = measure(args, runner, timed, raw) if timed else 0
    summary, floor_lat, cliffs = report(args, timed, raw, out, runner.unsupported)
    mem = memory(args, runner) if "memory" in benches else []

    write_csv(os.path.join(out, "raw.csv"), raw)
    write_csv(os.path.join(out, "summary.csv"), summary)
    write_csv(os.path.join(out, "floor.csv"), floor_lat)
    write_csv(os.path.join(out, "memory.csv"), mem)
    print("\n# targets met: %s; %s cliffs on %s (%s B/us below %.1f of the next smaller "
          "size): %s" % (targets_met(args, summary + floor_lat), args.provs[0],
                         args.anchors[0], args.provs[0], CLIFF,
                         ", ".join(cliffs) if cliffs else "none"))
    print("# %.0f s of measurements; raw data, summary and plots in %s/" % (elapsed, out))
    print("# command: %s" % command)
    if runner.failures:
        print("# FAILURES:")
        for f in runner.failures:
            print("#   " + f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
