"""The benchmark's smoke run: one small workload three ways, its table printed and written."""
from __future__ import annotations

import csv
import subprocess
import sys


def test_compare_benchmark_smoke_run(tmp_path, demo_model_path):
    out = tmp_path / "bench"
    run = subprocess.run(
        [sys.executable, "-m", "workbench", "bench", "--model", demo_model_path, "--max-num-seqs", "8",
         "compare", "--requests", "4", "--prompt-len", "32", "--output-len", "16", "--repeats", "1",
         "--hf-tokens", "4", "--out", str(out)],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(run.stdout[run.stdout.find("Workload"):])
    for row in ("(a) plain vLLM", "(b) workbench loop", "(c) HF generate, batch 1"):
        assert f"| {row}" in run.stdout
    assert "b/a throughput" in run.stdout and "a/c (HF generate, batch 1)" in run.stdout
    rows = {r[0]: r for r in csv.reader((out / "benchmark.csv").open())}
    assert float(rows["(a) plain vLLM"][1]) > 0 and float(rows["(b) workbench loop"][1]) > 0
    assert (out / "benchmark.svg").read_text().startswith("<svg")
