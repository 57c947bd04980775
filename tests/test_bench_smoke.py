"""The benchmark's smoke run: one small workload four ways, its table printed and written; path (d)
runs the real window offscreen on the shared engine, handed over and back: with the process client
(the default) the engine lives in the window's engine-client process and (a) and (b) run there; with
the thread client through AdoptEngine and ReleaseEngine."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest


def compare(model: str, out, *options: str) -> subprocess.CompletedProcess:
    """``bench compare`` on the demo model, 4 requests of 32 + 16 tokens, one repeat; asserts it succeeded."""
    run = subprocess.run(
        [sys.executable, "-m", "workbench", "bench", "--model", model, "--max-num-seqs", "8", "compare",
         "--requests", "4", "--prompt-len", "32", "--output-len", "16", "--repeats", "1", *options,
         "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


@pytest.mark.slow
def test_compare_benchmark_smoke_run(tmp_path, demo_model_path):
    out = tmp_path / "bench"
    run = compare(demo_model_path, out, "--paths", "a,b,c,d", "--single-samples", "2")
    print(run.stdout[run.stdout.find("Workload"):])
    assert "(d) runs the engine-client process" in run.stdout, "the default client is the process"
    for row in ("(a) plain vLLM", "(b) workbench loop", "(d) workbench app", "(c) HF generate, batch 1"):
        assert f"| {row}" in run.stdout
    assert "b/a throughput" in run.stdout and "a/c (HF generate, batch 1)" in run.stdout
    assert "d/a throughput, per repeat" in run.stdout and "d/a single stream, per repeat" in run.stdout
    assert "; in run order: " in run.stdout  # each pair, so that several commands can be pooled
    edges = next(line for line in run.stdout.splitlines() if line.startswith("- a run's edges"))
    for key in ("a", "b", "d"):  # first token after the start / the end after the last token, ms
        first, end = (float(x) for x in edges.split(f"({key}) ")[1].split(",")[0].split(" / "))
        assert first > 0 and end >= 0, edges
    rows = {r[0]: r for r in csv.reader((out / "benchmark.csv").open())}
    for path in ("(a) plain vLLM", "(b) workbench loop", "(d) workbench app"):
        assert float(rows[path][1]) > 0 and float(rows[path][-1]) > 0, rows[path]  # tok/s, client CPU µs/token
    # HF runs the same output length as (a), at each batch size up to the number of requests.
    assert "(c) batch sizes tried, 16 new tokens per sequence each: 1 (" in run.stdout
    assert rows["(c) HF generate, batch 1"][2] == "16 new tokens/seq"
    assert (out / "benchmark.svg").read_text().startswith("<svg")
    # HF's TTFT and token gaps come from the generate call that gives its rate: never negative,
    # and its batch-1 row has a single-stream speed like (a) and (b).
    header = rows["path"]
    hf_one = dict(zip(header, rows["(c) HF generate, batch 1"]))
    assert float(hf_one["ttft_ms_p50"]) > 0 and float(hf_one["itl_ms_p50"]) > 0
    assert float(hf_one["single_stream_tok_s"]) > 0
    assert "b/a single stream, per repeat" in run.stdout
    cpu_line = next(line for line in run.stdout.splitlines() if line.startswith("- CPU µs per output token"))
    client_a = float(cpu_line.split("(a) ")[1].split(" /")[0])
    assert client_a > 0, cpu_line


@pytest.mark.slow
def test_compare_benchmark_with_the_thread_client(tmp_path, demo_model_path):
    out = tmp_path / "bench"
    run = compare(demo_model_path, out, "--paths", "a,d", "--single-samples", "1", "--client", "thread")
    assert "engine-client process" not in run.stdout, "the thread client shares the engine in this process"
    rows = {r[0]: r for r in csv.reader((out / "benchmark.csv").open())}
    for path in ("(a) plain vLLM", "(d) workbench app"):
        assert float(rows[path][1]) > 0 and float(rows[path][-1]) > 0, rows[path]
