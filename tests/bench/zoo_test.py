#!/usr/bin/env python3
"""bench/zoo.py without a GPU: its workload table, its graphs (each one must pass `kiln check`
and plan with `kiln dump`), its shards and its report.

    python3 tests/bench/zoo_test.py KILN [unittest arguments]
"""

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ZOO = ROOT / "bench" / "zoo.py"
sys.path.insert(0, str(ROOT / "bench"))
import zoo  # noqa: E402

KILN = None  # set from the command line
REDUCTION_CLASSES = {"row", "column", "middle", "multi-axis", "softmax", "norm"}


def run(*args, check=True):
    proc = subprocess.run([*map(str, args)], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def zoo_py(*args, check=True):
    return run(sys.executable, ZOO, *args, check=check)


def listed_names(*args):
    """The workload names `zoo.py --list ARGS` prints, in order."""
    lines = zoo_py("--list", *args).stdout.splitlines()
    return [line.split()[0] for line in lines[1:-1]]


class ZooTableTest(unittest.TestCase):
    def test_the_zoo_covers_the_issue(self):
        names = listed_names()
        self.assertEqual(names, [w.name for w in zoo.WORKLOADS])
        self.assertEqual(len(set(names)), len(names))
        self.assertGreaterEqual(len(names), 40)
        self.assertEqual({w.cls for w in zoo.WORKLOADS}, set(zoo.CLASSES))
        dtypes = {d for w in zoo.WORKLOADS for _, d, _ in zoo.graph_of(w).inputs}
        self.assertLessEqual({"f32", "f16", "bf16"}, dtypes)
        self.assertGreaterEqual(sum(w.cliff for w in zoo.WORKLOADS), 8)

    def test_every_workload_fits_the_memory_budget(self):
        # The float64 reference of the torch check holds up to 4 x a bf16 workload's bytes.
        for w in zoo.WORKLOADS:
            self.assertLessEqual(zoo.graph_of(w).compulsory_bytes(), 300e6, w.name)

    def test_the_list_prints_compulsory_bytes(self):
        line = next(l for l in zoo_py("--list").stdout.splitlines() if l.startswith("transpose_add_4096_f32"))
        self.assertIn(f"{3 * 4096 * 4096 * 4:,d}", line)  # x and y read, out written, f32

    def test_shards_partition_the_selection(self):
        shards = [listed_names("--shard", f"{i}/3") for i in (1, 2, 3)]
        self.assertTrue(all(shards))
        self.assertEqual(sorted(sum(shards, [])), sorted(w.name for w in zoo.WORKLOADS))
        self.assertEqual(listed_names("--classes", "permute", "--only", "transpose_add_4096_f32,bias_last_bf16"),
                         ["transpose_add_4096_f32"])

    def test_bad_selections_are_usage_errors(self):
        for args in (["--only", "nope"], ["--classes", "rows"], ["--shard", "4/3"], ["--kiln-only"]):
            proc = zoo_py("--list", *args, check=False)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("error:", proc.stderr)


class ZooGraphsTest(unittest.TestCase):
    """Every graph zoo.py writes is a valid kiln graph, and plans as its class says."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="zoo_test_")
        cls.folder = pathlib.Path(cls.tmp.name)
        zoo_py("--write-graphs", cls.folder)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_graph_per_workload(self):
        written = sorted(p.stem for p in self.folder.glob("*.json"))
        self.assertEqual(written, sorted(w.name for w in zoo.WORKLOADS))

    def test_kiln_checks_every_graph(self):
        for w in zoo.WORKLOADS:
            with self.subTest(w.name):
                out = run(KILN, "check", self.folder / f"{w.name}.json").stdout
                self.assertTrue(out.startswith(f"graph {w.name}("), out[:200])

    def test_reductions_plan_into_reduction_kernels(self):
        for w in zoo.WORKLOADS:
            with self.subTest(w.name):
                report = run(KILN, "dump", self.folder / f"{w.name}.json").stdout
                kinds = [line.split()[2] for line in report.splitlines() if line.startswith("region ")]
                self.assertTrue(kinds, report)
                if w.cls in REDUCTION_CLASSES and w.name != "row_sum_1Mx1_f32":
                    self.assertTrue(any(k.endswith("_reduction") for k in kinds), f"{w.name}: {kinds}")
        # A sum over an axis of extent 1 is its operand: canonicalize makes it a reshape (a view).
        report = run(KILN, "dump", self.folder / "row_sum_1Mx1_f32.json").stdout
        kinds = [line.split()[2] for line in report.splitlines() if line.startswith("region ")]
        self.assertEqual(kinds, ["view"], report)


def bench_record(graph_us, floor_us, predicted_us, regions, copy_us=None):
    """A `kiln bench --json` record, reduced to what zoo.py reads."""
    steps = [{"region": r, "label": f"region {r}", "kind": "kernel", "predicted_us": p, "measured_us": m}
             for r, m, p in regions]
    return {"graph_us": graph_us, "floor_us": floor_us, "predicted_us": predicted_us, "copy_gbps": 3000.0,
            "same_size_copy_us": copy_us, "steps": steps}


def workload_record(name, kiln, eager_us, compile_us, eager_ok=True):
    return {"name": name, "class": "row", "compulsory_bytes": 1_000_000, "kiln": kiln,
            "torch": {"eager": {"median_us": eager_us, "check_ok": eager_ok, "check": {"y": 0.0}},
                      "compile": {"median_us": compile_us, "check_ok": True, "check": {"y": 0.0}}}}


class ZooReportTest(unittest.TestCase):
    """The summary line and the slow regions from results of two shards (made-up figures)."""

    def test_report_merges_shards_into_one_summary(self):
        a = workload_record("a", bench_record(50.0, 40.0, 45.0, [(0, 50.0, 45.0)], copy_us=45.0), 120.0, 100.0)
        b = workload_record("b", bench_record(30.0, 10.0, 10.0, [(0, 25.0, 5.0), (1, 5.0, 5.0)], copy_us=15.0), 20.0,
                            15.0)
        c = workload_record("c", {"error": "kiln bench exited 1: boom"}, 10.0, 9.0, eager_ok=False)
        with tempfile.TemporaryDirectory() as tmp:
            paths = [pathlib.Path(tmp) / "1.json", pathlib.Path(tmp) / "2.json"]
            paths[0].write_text(json.dumps({"device": {"name": "Test GPU"}, "workloads": [a, b]}))
            paths[1].write_text(json.dumps({"device": {"name": "Test GPU"}, "workloads": [c]}))
            out = zoo_py("--report", *paths).stdout
        self.assertEqual(out.strip().splitlines()[-1],
                         "zoo: 3 workloads, L2 flushed: floor/kiln min 0.33 (b), geomean 0.52 over 2; "
                         "same-size copy/kiln min 0.50 (b), geomean 0.67 over 2; "
                         "speed-up over torch.compile min 0.50 (b), geomean 1.00 over 2; "
                         "worst prediction error +200% (b: measured 3.00 x predicted)")
        self.assertIn("regions measured above 2 x their prediction: 1\n  b region 0: 25.0 us measured, "
                      "5.0 us predicted (5.0 x)", out)
        row_c = next(l for l in out.splitlines() if l.startswith("c "))
        self.assertIn("kiln: kiln bench exited 1: boom; eager: check FAILED", row_c)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: zoo_test.py KILN [unittest arguments]")
    KILN = sys.argv.pop(1)
    unittest.main()
