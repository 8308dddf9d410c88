#!/usr/bin/env python3
"""bench/scale_tokens.py without a GPU: transformer_block at 16, 1 and 2048 tokens passes
`kiln check`, plans into the same seven regions as the example (attention one region), has the
token count where it should and nowhere else, and `bench/peers.py --examples DIR --list` reads it.

    python3 tests/bench/scale_tokens_test.py KILN [unittest arguments]
"""

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCALE = ROOT / "bench" / "scale_tokens.py"
PEERS = ROOT / "bench" / "peers.py"
EXAMPLE = ROOT / "examples" / "transformer_block.json"
KILN = None  # set from the command line


def run(*args):
    proc = subprocess.run([*map(str, args)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


class ScaleTokensTest(unittest.TestCase):
    def scaled(self, tokens, out):
        run(sys.executable, SCALE, "--tokens", tokens, "--out", out)
        return json.loads((pathlib.Path(out) / "transformer_block.json").read_text())

    def test_every_size_checks_and_plans_as_the_example(self):
        example = json.loads(EXAMPLE.read_text())
        for tokens in (16, 1, 2048):
            with self.subTest(tokens=tokens), tempfile.TemporaryDirectory() as out:
                graph = self.scaled(tokens, out)
                path = pathlib.Path(out) / "transformer_block.json"
                run(KILN, "check", path)
                dump = run(KILN, "dump", path)
                regions = [line.split()[2] for line in dump.splitlines() if line.startswith("region ")]
                self.assertEqual(regions, ["row_reduction", "matmul", "attention", "matmul", "row_reduction",
                                           "matmul", "matmul"], dump)
                x = next(i for i in graph["inputs"] if i["name"] == "x")
                self.assertEqual(x["shape"], [tokens, 1024])
                # Only the token extents changed: the weights and every other attribute stay.
                self.assertEqual([i for i in graph["inputs"] if i["name"] != "x"],
                                 [i for i in example["inputs"] if i["name"] != "x"])
                for ours, theirs in zip(graph["nodes"], example["nodes"]):
                    if ours["op"] == "slice":
                        self.assertEqual(ours["attrs"]["ends"][1:], theirs["attrs"]["ends"][1:])
                        self.assertEqual(ours["attrs"]["ends"][0], tokens)
                    elif ours["op"] != "reshape":
                        self.assertEqual(ours, theirs)

    def test_peers_reads_the_scaled_graph(self):
        with tempfile.TemporaryDirectory() as out:
            self.scaled(16, out)
            listing = run(sys.executable, PEERS, "--examples", out, "--list", "--only", "transformer_block")
            self.assertIn("x bf16[16, 1024]", listing)


if __name__ == "__main__":
    KILN = sys.argv.pop(1)
    unittest.main()
