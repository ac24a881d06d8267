#!/usr/bin/env python3
"""Unit tests of test/bench/compare.py's arithmetic: the medians and ratios of
the two providers, the per-repetition pair ratios, the targets and whether
they are met, the B/us steps and their CLIFF mark, the copy floor tables, the
near/far placement split, the ring_floor table, the split of the rows
between the anchors (libfabric 1.17 and 2.6) and the RMA and atomic modes
(their command lines, targets and 'unsupported' rows).  Synthetic rows only; no
benchmark runs and no plot."""
import argparse
import contextlib
import importlib.util
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR_TEST = os.path.join(os.environ["srcdir"], "test") if "srcdir" in os.environ else HERE
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location(
    "compare", os.path.join(SRCDIR_TEST, "bench", "compare.py"))
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

KIB, MIB = 1024, 1024 * 1024
ARGS = argparse.Namespace(provs=["xshm", "shm"], senders=4, anchors=["1.17"])
BOTH = argparse.Namespace(provs=["xshm", "shm"], senders=4, anchors=["1.17", "2.6"],
                          libfabric_26="/lf26")


def row(bench, provider, size, rep, value, anchor=None):
    r = {"bench": bench, "provider": provider, "size": size, "rep": rep, "value": value}
    if anchor is not None:
        r["anchor"] = anchor
    return r


def pair(bench, size, rep, first, second, anchor=None):
    return [row(bench, "xshm", size, rep, first, anchor),
            row(bench, "shm", size, rep, second, anchor)]


def lines_of(func, *a):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        func(*a)
    return {l.split()[0]: l for l in out.getvalue().splitlines() if l.strip()}


class Summarize(unittest.TestCase):
    def setUp(self):
        raw = (pair("latency", 8, 0, 1.0, 8.0) + pair("latency", 8, 1, 2.0, 1.0)
               + pair("latency", 8, 2, 4.0, 5.0))
        self.r = compare.summarize(ARGS, "latency", raw)[0]

    def test_median_of_each_provider(self):
        self.assertEqual((self.r["median_xshm"], self.r["median_shm"]), (2.0, 5.0))

    def test_ratio_is_first_median_over_second(self):
        self.assertAlmostEqual(self.r["ratio"], 0.4)

    def test_pairs_is_median_of_per_repetition_ratios(self):
        self.assertAlmostEqual(self.r["pair_ratio"], 0.8)

    def test_n_counts_repetitions(self):
        self.assertEqual(self.r["n"], 3)

    def test_repetition_missing_a_provider_is_left_out_of_pairs(self):
        raw = pair("latency", 8, 0, 1.0, 2.0) + [row("latency", "xshm", 8, 1, 3.0)]
        r = compare.summarize(ARGS, "latency", raw)[0]
        self.assertEqual((r["median_xshm"], r["pair_ratio"], r["n"]), (2.0, 0.5, 1))


class Targets(unittest.TestCase):
    def test_latency_targets(self):
        got = [compare.target_for("latency", s)
               for s in (8, KIB, 2007, 4 * KIB, 8 * KIB, 16 * KIB, 64 * KIB, 4 * MIB)]
        self.assertEqual(got, [0.6, 0.6, None, 0.9, 0.45, 0.6, 1.0, 1.0])

    def test_bandwidth_targets(self):
        got = [compare.target_for("bandwidth", s) for s in (8, 64, KIB, 2 * KIB, MIB)]
        self.assertEqual(got, [3.0, 2.0, 2.0, None, 1.0])

    def test_msgrate_target(self):
        self.assertEqual(compare.target_for("msgrate", 8), 3.0)

    def test_latency_met_at_or_below_bound(self):
        raw = (pair("latency", 8, 0, 5.0, 10.0) + pair("latency", 16, 0, 6.0, 10.0)
               + pair("latency", 32, 0, 7.0, 10.0) + pair("latency", 2007, 0, 1.0, 10.0))
        got = [r["met"] for r in compare.summarize(ARGS, "latency", raw)]
        self.assertEqual(got, [True, True, False, None])

    def test_bandwidth_met_at_or_above_bound(self):
        raw = (pair("bandwidth", 8, 0, 30.0, 10.0) + pair("bandwidth", 64, 0, 40.0, 10.0)
               + pair("bandwidth", KIB, 0, 19.0, 10.0))
        got = [r["met"] for r in compare.summarize(ARGS, "bandwidth", raw)]
        self.assertEqual(got, [True, True, False])


class Steps(unittest.TestCase):
    def test_latency_step_is_bytes_per_us_against_previous_size(self):
        raw = (pair("latency", KIB, 0, 2.0, 1.0) + pair("latency", 2 * KIB, 0, 8.0, 1.0)
               + pair("latency", 4 * KIB, 0, 8.0, 4.0))
        rows = compare.summarize(ARGS, "latency", raw)
        self.assertEqual([r["step_xshm"] for r in rows], [None, 0.5, 2.0])
        self.assertEqual([r["step_shm"] for r in rows], [None, 2.0, 0.5])

    def test_bandwidth_step_is_median_over_previous_median(self):
        raw = pair("bandwidth", 64, 0, 100.0, 100.0) + pair("bandwidth", 128, 0, 50.0, 400.0)
        rows = compare.summarize(ARGS, "bandwidth", raw)
        self.assertEqual([r["step_xshm"] for r in rows], [None, 0.5])
        self.assertEqual([r["step_shm"] for r in rows], [None, 4.0])


class PrintTable(unittest.TestCase):
    def setUp(self):
        def r(size, met, step):
            return {"size": size, "median_xshm": 1.0, "median_shm": 2.0, "ratio": 0.5,
                    "pair_ratio": 0.5, "target": 0.6, "met": met, "step_xshm": step,
                    "step_shm": 1.0}
        rows = [r(8, True, None), r(16, False, 0.9), r(32, None, 0.89)]
        self.lines = lines_of(compare.print_table, ARGS, "latency", {"1.17": rows})

    def test_cliff_marked_below_threshold_only(self):
        self.assertIn("CLIFF", self.lines["32"])
        self.assertNotIn("CLIFF", self.lines["16"])
        self.assertNotIn("CLIFF", self.lines["8"])

    def test_ok_column(self):
        self.assertEqual([self.lines[s].split()[7] for s in ("8", "16", "32")],
                         ["yes", "NO", "-"])


class Floor(unittest.TestCase):
    def setUp(self):
        raw = [row("floor", "floor-memcpy", 64 * KIB, rep, v)
               for rep, v in enumerate((1.0, 2.0, 3.0))]
        raw += [row("floor", "floor-memcpy", 128 * KIB, 0, 8.0),
                row("floor", "floor-cma", 64 * KIB, 0, 4.0),
                row("floor", "floor-cma", 256 * KIB, 0, 4.0),
                row("latency", "floor-memcpy", 64 * KIB, 0, 100.0)]
        self.floor = compare.summarize_floor(raw)

    def test_medians_and_steps_per_method(self):
        self.assertEqual(self.floor, {
            "memcpy": [(64 * KIB, 2.0, None), (128 * KIB, 8.0, 0.5)],
            "memcpy-split": [],
            "cma": [(64 * KIB, 4.0, None), (256 * KIB, 4.0, 4.0)],
            "cma-split": []})

    def test_floor_step_of_reference_method(self):
        self.assertEqual(compare.floor_step(self.floor, 128 * KIB), 0.5)
        self.assertIsNone(compare.floor_step(self.floor, 64 * KIB))

    def test_floor_step_none_for_size_not_measured(self):
        self.assertIsNone(compare.floor_step(self.floor, 256 * KIB))


class Placements(unittest.TestCase):
    @staticmethod
    def raw(probes):
        out = []
        for rep, v in enumerate(probes):
            out += pair("latency", 8, rep, 1.0, v) + pair("latency", 16, rep, 1.0, 0.5)
        return out

    def test_split_by_second_provider_at_smallest_size(self):
        split = compare.placements(ARGS, self.raw([1.0] * 5 + [2.5] * 5 + [2.0]))
        self.assertEqual(split, ({0, 1, 2, 3, 4, 10}, {5, 6, 7, 8, 9}))

    def test_none_when_a_side_has_too_few_repetitions(self):
        self.assertIsNone(compare.placements(ARGS, self.raw([1.0] * 6 + [2.5] * 4)))


class PrintRing(unittest.TestCase):
    def setUp(self):
        raw = []
        for rep, (ring, first, second) in enumerate(((0.1, 0.3, 0.5), (0.2, 0.3, 0.4),
                                                     (0.3, 0.9, 0.5))):
            raw += [row("ring", "ring", 8, rep, ring)] + pair("latency", 8, rep, first, second)
            raw += pair("latency", 64, rep, 1.0, 1.0)
        self.lines = lines_of(compare.print_beside, ARGS, raw, "ring")

    def test_ring_row_medians_and_pair_figures(self):
        self.assertEqual(self.lines["8"].split(),
                         ["8", "0.200", "|", "0.300", "0.500", "0.50", "200"])

    def test_size_without_ring_rows_not_printed(self):
        self.assertNotIn("64", self.lines)


class PrintStream(unittest.TestCase):
    def setUp(self):
        raw = []
        for rep, (floor, first, second) in enumerate(((100.0, 90.0, 50.0),
                                                      (200.0, 220.0, 100.0),
                                                      (100.0, 100.0, 60.0))):
            raw += [row("stream", "stream", 4096, rep, floor)]
            raw += pair("bandwidth", 4096, rep, first, second)
            raw += pair("bandwidth", 8, rep, 1.0, 1.0)
        self.lines = lines_of(compare.print_beside, ARGS, raw, "stream")

    def test_floor_medians_and_ratios_to_the_floor(self):
        self.assertEqual(self.lines["4K"].split(),
                         ["4K", "100.0", "|", "100.0", "60.0", "1.00", "0.50"])

    def test_size_without_stream_rows_not_printed(self):
        self.assertNotIn("8", self.lines)


class PrintPingpong(unittest.TestCase):
    def test_latency_over_the_floor(self):
        raw = []
        for rep, (floor, first, second) in enumerate(((0.2, 0.25, 0.3), (0.25, 0.25, 0.4),
                                                      (0.2, 0.3, 0.25))):
            raw += [row("pingpong", "pingpong", 4096, rep, floor)]
            raw += pair("latency", 4096, rep, first, second)
        lines = lines_of(compare.print_beside, ARGS, raw, "pingpong")
        self.assertEqual(lines["4K"].split(),
                         ["4K", "0.200", "|", "0.250", "0.300", "1.25", "1.50"])


class BySizeAndRep(unittest.TestCase):
    def test_groups_only_named_benches(self):
        raw = [row("latency", "xshm", 8, 0, 1.0), row("ring", "ring", 8, 0, 0.5),
               row("bandwidth", "xshm", 8, 0, 99.0), row("bandwidth", "shm", 64, 1, 9.0)]
        self.assertEqual(compare.by_size_and_rep(raw, ("latency", "ring")),
                         {8: {0: {"xshm": 1.0, "ring": 0.5}}})


class Anchors(unittest.TestCase):
    def setUp(self):
        self.raw = (pair("latency", 8, 0, 1.0, 4.0, "1.17")
                    + pair("latency", 8, 0, 1.0, 2.0, "2.6")
                    + [row("ring", "ring", 8, 0, 0.5, "")])

    def test_targets_against_2_6(self):
        got = [compare.target_for(b, s, "2.6") for b, s in
               (("latency", 1), ("latency", 4 * MIB), ("bandwidth", 8), ("bandwidth", MIB),
                ("msgrate", 8), ("msgrate", 64), ("incast", 64 * KIB))]
        self.assertEqual(got, [0.8, 0.8, 1.2, 1.2, 1.5, None, 1.2])

    def test_summarize_takes_only_its_anchors_rows_and_targets(self):
        got = [(r["anchor"], r["median_shm"], r["ratio"], r["target"])
               for x in ("1.17", "2.6") for r in compare.summarize(BOTH, "latency", self.raw, x)]
        self.assertEqual(got, [("1.17", 4.0, 0.25, 0.6), ("2.6", 2.0, 0.5, 0.8)])

    def test_rows_without_provider_belong_to_every_anchor(self):
        for x in ("1.17", "2.6"):
            view = compare.by_size_and_rep(self.raw, ("latency", "ring"), x)
            self.assertEqual(view[8][0]["ring"], 0.5)

    def test_print_table_sets_anchors_side_by_side(self):
        tables = {x: compare.summarize(BOTH, "latency", self.raw, x) for x in BOTH.anchors}
        f = lines_of(compare.print_table, BOTH, "latency", tables)["8"].split()
        self.assertEqual(f, ["8", "|", "1.000", "4.000", "0.25", "0.25", "<=0.60", "yes",
                             "|", "1.000", "2.000", "0.50", "0.50", "<=0.80", "yes"])

    def test_targets_met_per_anchor(self):
        rows = [{"anchor": "1.17", "met": True}, {"anchor": "1.17", "met": None},
                {"anchor": "2.6", "met": False}, {"anchor": "2.6", "met": True}]
        self.assertEqual(compare.targets_met(BOTH, rows),
                         "1 of 1 against shm-1.17, 1 of 2 against shm-2.6")

    def test_only_2_6_runs_with_its_library_path(self):
        self.assertIsNone(compare.anchor_env(BOTH, "1.17"))
        path = compare.anchor_env(BOTH, "2.6")["LD_LIBRARY_PATH"]
        self.assertEqual(path.split(":")[0], "/lf26/lib")

    def test_missing_2_6_leaves_1_17_or_fails_alone(self):
        ap = argparse.ArgumentParser()
        args = argparse.Namespace(anchors="1.17,2.6", libfabric_26="/nonexistent")
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(compare.choose_anchors(ap, args), ["1.17"])
        self.assertIn("WARNING: no libfabric 2.6", out.getvalue())
        args.anchors = "2.6"
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            compare.choose_anchors(ap, args)


class FloorVsLatency(unittest.TestCase):
    def test_best_method_ratio_and_target_from_64k(self):
        floor = {"memcpy": [(8, 0.1, None), (64 * KIB, 2.0, None)],
                 "cma": [(8, 0.2, None), (64 * KIB, 1.0, None)]}
        latency = {"1.17": [{"size": 8, "median_xshm": 0.3, "median_shm": 0.6},
                            {"size": 64 * KIB, "median_xshm": 1.2, "median_shm": 2.0}],
                   "2.6": []}
        got = [(r["anchor"], r["size"], r["best_method"], r["ratio"], r["target"], r["met"])
               for r in compare.floor_rows(BOTH, floor, latency)]
        self.assertEqual([g[:3] for g in got], [("1.17", 8, "memcpy"),
                                                ("1.17", 64 * KIB, "cma"),
                                                ("2.6", 8, "memcpy"), ("2.6", 64 * KIB, "cma")])
        self.assertAlmostEqual(got[0][3], 3.0)
        self.assertEqual(got[0][4:], (None, None))
        self.assertAlmostEqual(got[1][3], 1.2)
        self.assertEqual(got[1][4:], (1.3, True))
        self.assertEqual(got[3][3:], (None, 1.3, None))


class Rma(unittest.TestCase):
    ARGV = argparse.Namespace(max_point_ms=200, yield_cpu=False, mean=False, bind=True,
                              huge=True, rewrite=True, read=True, rma_sizes="8,1M",
                              rma_delivery=False, rx_offset=None)

    def test_targets_against_2_6_only(self):
        got = [(compare.target_for(b, 8, "1.17"), compare.target_for(b, MIB, "2.6"))
               for b in ("rma_write_lat", "rma_read_bw", "atomic_lat", "atomic_rate")]
        self.assertEqual(got, [(None, 0.8), (None, 1.2), (None, 0.8), (None, 1.2)])

    def test_argv_of_a_mode_with_sizes_and_buffer_flags_for_messages_left_out(self):
        argv = compare.bench_argv(self.ARGV, "rma_read_bw", ["xshm", "shm"])
        self.assertEqual(os.path.basename(argv[0]), "rma")
        self.assertEqual(argv[1:], ["-m", "read_bw", "-p", "xshm,shm", "-r", "1", "-t",
                                    "200", "-b", "-H", "-s", "8,1M"])

    def test_rx_offset_passed_to_rma_messages_and_the_floor(self):
        args = argparse.Namespace(**{**vars(self.ARGV), "rx_offset": 16, "sizes": None})
        rma = compare.bench_argv(args, "rma_read_lat", ["xshm"])
        self.assertEqual(rma[rma.index("-O") + 1], "16")
        for bench in ("latency", "floor"):
            argv = compare.bench_argv(args, bench, ["xshm"])
            self.assertEqual(argv[argv.index("-O") + 1], "16")
        self.assertNotIn("-O", compare.bench_argv(self.ARGV, "rma_read_lat", ["xshm"]))

    def test_delivery_asked_for_with_rma_delivery(self):
        args = argparse.Namespace(**{**vars(self.ARGV), "rma_delivery": True})
        self.assertEqual(compare.bench_argv(args, "rma_write_lat", ["xshm"])[-1], "-D")
        self.assertNotIn("-D", compare.bench_argv(self.ARGV, "rma_write_lat", ["xshm"]))

    def test_atomics_at_their_default_size(self):
        argv = compare.bench_argv(self.ARGV, "atomic_rate", ["xshm", "shm"])
        self.assertEqual(argv[1:3], ["-m", "atomic_rate"])
        self.assertNotIn("-s", argv)

    def test_unsupported_rows_noted_not_measured(self):
        class Runner:
            unsupported = set()

            def run(self, argv, what, env=None):
                return ["xshm 8 0 unsupported", "shm 8 0 0.5"]

        runner, raw = Runner(), []
        args = argparse.Namespace(provs=["xshm", "shm"], anchors=["1.17"], reps=1,
                                  **vars(self.ARGV))
        with contextlib.redirect_stderr(io.StringIO()):
            compare.measure(args, runner, ["atomic_lat"], raw)
        self.assertEqual([(r["provider"], r["value"]) for r in raw], [("shm", 0.5)])
        self.assertEqual(runner.unsupported, {("atomic_lat", "1.17", "xshm")})
        r = compare.summarize(ARGS, "atomic_lat", raw)[0]
        self.assertEqual((r["median_shm"], r["ratio"], r["met"]), (0.5, None, None))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            compare.print_unsupported(BOTH, "atomic_lat", runner.unsupported |
                                      {("atomic_lat", "2.6", "shm")})
        self.assertEqual(out.getvalue(),
                         "# atomic_lat: not supported by shm-2.6, xshm on 1.17\n")


if __name__ == "__main__":
    unittest.main()
