#!/usr/bin/env python3
"""Combines the two runs of `ab.sh --swap` into one table.

Loaded side by side, two providers differ by a bias of the run's own: the
same code under the names xshm and xshmbase gave ratios from 0.92 to 1.08
in one run.  So ab.sh --swap measures each pair of builds twice, with their
names swapped:

    forward  = (tree as xshm)  / (REV as xshmbase) = effect * bias
    swapped  = (REV as xshm)   / (tree as xshmbase) = bias / effect

and this prints effect = sqrt(forward / swapped), the change the tree
makes, and bias = sqrt(forward * swapped), the names' share, for the ratio
of the medians and the median of the per-repetition ratios.

usage: ab_swap.py FORWARD_DIR SWAPPED_DIR
"""
import csv
import math
import os
import sys


def load(directory):
    with open(os.path.join(directory, "summary.csv"), newline="") as f:
        return {(row["bench"], row["size"]): row for row in csv.DictReader(f)}


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def split(forward, swapped):
    """(effect, bias) from the two ratios, or (None, None)."""
    if forward is None or swapped is None:
        return None, None
    return math.sqrt(forward / swapped), math.sqrt(forward * swapped)


def cell(value):
    return "%8.3f" % value if value is not None else "%8s" % "-"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    forward, swapped = load(sys.argv[1]), load(sys.argv[2])
    print("# effect: tree / REV, with the names' bias taken out (below 1: the "
          "tree is faster for latency, slower for bandwidth)")
    print("%-10s %8s %8s %8s %8s %8s %8s %8s" %
          ("bench", "size", "forward", "swapped", "effect", "bias",
           "effect_p", "bias_p"))
    for key, row in forward.items():
        if key not in swapped:
            continue
        other = swapped[key]
        effect, bias = split(number(row["ratio"]), number(other["ratio"]))
        effect_p, bias_p = split(number(row["pair_ratio"]),
                                 number(other["pair_ratio"]))
        print("%-10s %8s %s %s %s %s %s %s" %
              (key[0], key[1], cell(number(row["ratio"])),
               cell(number(other["ratio"])), cell(effect), cell(bias),
               cell(effect_p), cell(bias_p)))


if __name__ == "__main__":
    main()
