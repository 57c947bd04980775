"""The capacity planner fed from the Hub's metadata before a download (``hub.remote_model.look_up``:
the file list, config.json, the safetensors headers), against vLLM's own block count:

    python -m workbench.bench.hub_capacity --out DIR

- the H200 shapes, Qwen2.5-0.5B and Qwen2.5-7B: each shipped preset resolved for the H200 the earlier device
  runs used (143,771 MiB, vLLM 0.26.0), its estimate from the Hub's metadata of a config-only repo of
  that shape (the published config.json, header-only safetensors shards), beside the block count vLLM
  allocated there (recorded under docs/results/h200-hub-capacity; nothing is started for these here);
- the demo model on this machine's CPU build: downloaded through Get a model's own path, then each
  shipped preset started for real, its estimate from the Hub's metadata beside vLLM's count (exact).

The Hub is the tests' (tests/hub_server.py: olah on loopback, the stand-in in front of it for what olah
does not serve offline). Each row is printed as JSON and the tables as Markdown; ``DIR`` keeps both.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDED = {  # shape -> vLLM's block counts on the H200 (2026-12-04, vLLM 0.26.0), one JSON row a preset, as
    # `vllm-workbench bench --shape SHAPE presets capacity --out DIR` wrote them there
    "qwen2.5-0.5b": ROOT / "docs/results/h200-hub-capacity/05b/capacity.jsonl",
    "qwen2.5-7b": ROOT / "docs/results/h200-hub-capacity/7b/capacity.jsonl",
}
REPOS = {"qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct"}
DEMO_REPO = "workbench/demo"
H200_MIB = 143_771


def _hub(work: Path):
    from hub_repos import QWEN25_05B_CONFIG, QWEN25_7B_CONFIG, qwen7b_shaped_files
    from hub_server import HubServer, add_repo

    from workbench.engine.demo_model import ensure_demo_model

    server = HubServer(work)
    for (shape, repo), config in zip(REPOS.items(), (QWEN25_05B_CONFIG, QWEN25_7B_CONFIG)):
        add_repo(server, repo, qwen7b_shaped_files(work / f"src-{shape}", config=config))
    demo = work / "src-demo"
    shutil.copytree(ensure_demo_model(), demo)
    add_repo(server, DEMO_REPO, demo)
    return server.start()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.bench.hub_capacity")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-cpu", action="store_true", help="only the H200 shapes (no engine started)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hub-capacity-"))
    sys.path.insert(0, str(ROOT / "tests"))  # the tests' Hub: tests/hub_server.py
    import pytest
    from hub_server import point_client_at

    server = _hub(work)
    patch = pytest.MonkeyPatch()
    try:
        point_client_at(patch, server.endpoint, work / "hf-home")
        patch.setenv("WORKBENCH_DATA_DIR", str(work / "data"))
        rows = {"h200": h200_rows(), "cpu": [] if args.skip_cpu else cpu_rows(args.out)}
    finally:
        patch.undo()
        server.stop()
    (args.out / "hub-capacity.json").write_text(json.dumps(rows, indent=1))
    print(verdict(rows))
    return 0


def h200_rows() -> list[dict]:
    from workbench.bench.model_shapes import write_shape
    from workbench.bench.preset_bench import check_recorded
    from workbench.engine.spec import EngineConfig
    from workbench.hub.remote_model import look_up

    rows = []
    for shape, repo in REPOS.items():
        remote = look_up(repo, supported=frozenset({"Qwen2ForCausalLM"}))
        print(f"\n{shape}: {remote.summary()}; weights {remote.facts.weights_bytes:,} bytes from the Hub's list")
        base = EngineConfig(model=str(write_shape(shape)), extra=(("load_format", "dummy"),))
        for row in check_recorded(base, RECORDED[shape], H200_MIB, 1, facts=remote.facts):
            rows.append({"shape": shape, **row})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def cpu_rows(out: Path) -> list[dict]:
    from workbench.bench.preset_bench import run_capacity
    from workbench.engine.spec import EngineConfig
    from workbench.hub.download import Downloads
    from workbench.hub.remote_model import download_plan, look_up

    remote = look_up(DEMO_REPO, supported=frozenset({"Qwen2ForCausalLM"}))
    done = Downloads().start(download_plan(remote)).wait(300)
    print(f"\ndemo: {remote.summary()}; downloaded: {done.state} {done.text()}")
    base = EngineConfig(model=done.snapshot, max_model_len=2048, max_num_seqs=64, num_gpu_blocks_override=None,
                        scheduling_policy="priority")  # the app's demo configuration (app.demo_engine_config)
    return [{"shape": "demo (CPU)", **row} for row in run_capacity(base, out / "cpu", facts=remote.facts)]


def verdict(rows: dict) -> str:
    lines = ["\n| shape | preset | planner (from the Hub's metadata) | vLLM's blocks | off |", "|---|---|---|---|---|"]
    for row in rows["h200"] + rows["cpu"]:
        off = f"{row['off']:+.2%}" if row.get("off") is not None else "n/a"
        lines.append(f"| {row['shape']} | {row['preset']} | {row['estimate']:,} | "
                     f"{row['vllm']:,} | {off} |" if row.get("vllm") else f"| {row['shape']} | {row['preset']} | "
                     f"{row['estimate']:,} | not started | |")
    worst = max((abs(r["off"]) for r in rows["h200"] if r.get("off") is not None), default=None)
    exact = all(r.get("off") == 0 for r in rows["cpu"]) if rows["cpu"] else None
    lines.append(f"\nH200 shapes: the largest difference {worst:.2%} (target within 5 %)" if worst is not None else "")
    if exact is not None:
        lines.append(f"CPU demo model: {'exact for every preset' if exact else 'NOT exact'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
