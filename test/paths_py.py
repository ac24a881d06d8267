#!/usr/bin/env python3
"""Unit test of test/bench/paths.py's arithmetic: per benchmark and size, the
medians of the measured choice and of each forced path, and the choice's
speed relative to the better forced path (latency inverted).  Synthetic raw
lines only; no benchmark runs."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR_TEST = os.path.join(os.environ["srcdir"], "test") if "srcdir" in os.environ else HERE
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location(
    "paths", os.path.join(SRCDIR_TEST, "bench", "paths.py"))
paths = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paths)

RAW = """\
latency 0 xshm 65536 0 4.0
latency 0 xshmbounce 65536 0 5.0
latency 0 xshmscopy 65536 0 10.0
latency 1 xshm 65536 0 6.0
latency 1 xshmbounce 65536 0 4.0
latency 1 xshmscopy 65536 0 12.0
latency 2 xshm 65536 0 5.0
latency 2 xshmbounce 65536 0 4.5
latency 2 xshmscopy 65536 0 8.0
bandwidth 0 xshm 1048576 0 6000.0 0.005
bandwidth 0 xshmbounce 1048576 0 5000.0 0.004
bandwidth 0 xshmscopy 1048576 0 8000.0 0.007
bandwidth 0 xshm 16384 0 unsupported
"""


def summary(raw):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(raw)
    out = io.StringIO()
    try:
        sys.argv = ["paths.py", f.name]
        with contextlib.redirect_stdout(out):
            paths.main()
    finally:
        os.unlink(f.name)
    return out.getvalue()


class PathsSummary(unittest.TestCase):
    def line(self, text, size):
        return next(l for l in text.splitlines() if l.split() and l.split()[0] == str(size))

    def test_latency_against_the_faster_forced_path(self):
        # medians: auto 5.0, bounce 4.5, scopy 10.0: 4.5 / 5.0
        fields = self.line(summary(RAW), 65536).split()
        self.assertEqual(fields[1:4], ["5.00", "4.50", "10.00"])
        self.assertEqual(fields[4:], ["0.90", "(bounce)"])

    def test_bandwidth_against_the_faster_forced_path(self):
        fields = self.line(summary(RAW), 1048576).split()
        self.assertEqual(fields[4:], ["0.75", "(scopy)"])

    def test_a_size_without_every_provider_is_left_out(self):
        self.assertNotIn("16384", summary(RAW))


if __name__ == "__main__":
    unittest.main()
