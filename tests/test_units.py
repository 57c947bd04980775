"""Pure logic: installer choices, model checks, snapshot mirror, heatmap binning, conversations."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.model.conversations import Conversation
from workbench.engine.backend import SamplingSettings
from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED, BLOCK_STATE_FREE, BLOCK_STATE_IN_USE, BLOCK_STATE_SHARED, CHUNK_BLOCKS, KVPoolMirror,
)
from workbench.engine.model_source import ModelNotFoundError, resolve_model
from workbench.engine.heatmap_image import NO_BLOCK, grid_shape, heatmap_image

ROOT = Path(__file__).resolve().parent.parent


def _install_dry_run(*args, env_extra=None) -> str:
    import os
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, str(ROOT / "packaging/install.py"), "--dry-run", *args],
                          capture_output=True, text=True, env=env, check=True).stdout


def test_installer_dry_run_picks_cpu_build_without_nvidia_driver():
    out = _install_dry_run("--test", env_extra={"WORKBENCH_FORCE_CPU": "1"})
    assert "CPU build of vLLM" in out
    assert "torch==2.13.0+cpu" in out and "[cpu,test]" in out
    assert "uninstall -y torchvision torchaudio torchcodec" in out
    assert "-m pytest -ra --durations=25" in out  # the slowest tests named at the end of each run


def test_model_path_checks(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(ModelNotFoundError, match="config.json is missing"):
        resolve_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="no weights"):
        resolve_model(str(tmp_path))
    with pytest.raises(ModelNotFoundError, match="not in the Hugging Face cache"):
        resolve_model("nobody/no-such-model")


def _delta(version, full, n, ids, states, refs, hashed, tables=None, removed=()):
    """``tables``: request id -> (offset, appended block ids), packed the way the plugin sends them."""
    rows = [(req_id, offset, len(appended)) for req_id, (offset, appended) in (tables or {}).items()]
    table_ids = np.array([b for _, appended in (tables or {}).values() for b in appended], np.int32)
    return {"version": version, "full": full, "num_blocks": n, "block_size": 16,
            "ids": np.array(ids, np.int32).tobytes(), "states": np.array(states, np.int8).tobytes(),
            "ref_cnts": np.array(refs, np.int32).tobytes(), "hashed": np.array(hashed, np.bool_).tobytes(),
            "tables": rows, "table_ids": table_ids.tobytes(), "removed": list(removed), "counts": [1, 0, 0, 0, 0], "kv_usage": 0.0,
            "tokens_stored": 0, "engine_ns": 0}


def test_mirror_applies_deltas_and_appends_block_tables():
    mirror = KVPoolMirror()
    mirror.apply(_delta(1, True, 4, [0, 1, 2, 3], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]))
    mirror.apply(_delta(2, False, 4, [1, 2], [BLOCK_STATE_SHARED, BLOCK_STATE_IN_USE], [2, 1], [1, 0],
                        tables={"a-1": (0, [1, 2]), "b-1": (0, [2])}))
    mirror.apply(_delta(3, False, 4, [3], [BLOCK_STATE_IN_USE], [1], [0],
                        tables={"a-1": (2, [3])}))
    snap = mirror.snapshot({"a-1": "a"}, 1.0)
    assert snap.tables["a"].tolist() == [1, 2, 3] and snap.tables["b-1"].tolist() == [2]
    assert snap.ref_cnts.tolist() == [0, 2, 1, 1]
    assert snap.changed_at.tolist() == [1, 2, 2, 3]
    with pytest.raises(ValueError):
        snap.states[0] = 3  # snapshots are read-only
    mirror.apply(_delta(4, False, 4, [1, 2, 3], [BLOCK_STATE_CACHED, BLOCK_STATE_FREE, BLOCK_STATE_FREE],
                        [0, 0, 0], [1, 0, 0], removed=["a-1", "b-1"]))
    assert mirror.snapshot({}, 1.0).tables == {}


def test_snapshots_copy_only_the_chunks_a_delta_touched():
    n = CHUNK_BLOCKS * 3 + 5  # four chunks, the last one short
    mirror = KVPoolMirror()
    mirror.apply(_delta(1, True, n, list(range(n)), [BLOCK_STATE_FREE] * n, [0] * n, [0] * n))
    first = mirror.snapshot({}, 1.0)
    changed = [CHUNK_BLOCKS + 7, n - 1]  # in the second and the last chunk
    mirror.apply(_delta(2, False, n, changed, [BLOCK_STATE_IN_USE] * 2, [1, 1], [0, 0]))
    second = mirror.snapshot({}, 1.0)
    for name in ("states", "ref_cnts", "hashed", "changed_at"):
        same = [a is b for a, b in zip(first.chunks[name], second.chunks[name])]
        assert same == [True, False, True, False], name
    # Each snapshot keeps the pool as it was, whatever came later, and reads as whole arrays.
    assert first.states[changed].tolist() == [BLOCK_STATE_FREE] * 2 and first.ref_cnts.sum() == 0
    assert second.states[changed].tolist() == [BLOCK_STATE_IN_USE] * 2 and second.ref_cnts.sum() == 2
    assert second.changed_at[changed].tolist() == [2, 2] and len(second.hashed) == n
    assert np.array_equal(second.states, mirror.states)
    with pytest.raises(ValueError):
        second.ref_cnts[0] = 5
    # A resync (a new engine, another pool size) publishes every chunk again.
    mirror.apply(_delta(3, True, 4, [0, 1, 2, 3], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]))
    assert mirror.snapshot({}, 1.0).states.tolist() == [0, 1, 1, 1]


def test_heatmap_bins_show_the_most_used_state():
    per_cell, rows, columns = grid_shape(640_000, max_cells=256 * 256)
    assert per_cell == 10 and rows * columns * per_cell >= 640_000
    mirror = KVPoolMirror()
    n = 40
    states = [BLOCK_STATE_FREE] * n
    states[5] = BLOCK_STATE_SHARED
    states[17] = BLOCK_STATE_CACHED
    mirror.apply(_delta(1, True, n, list(range(n)), states, [0] * n, [0] * n))
    mirror.apply(_delta(2, False, n, [30], [BLOCK_STATE_IN_USE], [1], [0]))
    snap = mirror.snapshot({}, 0.0)
    image = heatmap_image(snap, since_version=1, max_cells=10)  # 4 blocks per cell
    cells = image.ravel()
    assert cells[1] == BLOCK_STATE_SHARED  # blocks 4-7 hold a shared block
    assert cells[4] == BLOCK_STATE_CACHED  # blocks 16-19
    assert cells[7] == BLOCK_STATE_IN_USE + 5  # block 30 changed since version 1: highlighted
    assert cells[0] == BLOCK_STATE_FREE


@pytest.mark.parametrize("num_blocks", [CHUNK_BLOCKS * 2 + 3, 120_859, 641_256])
def test_heatmap_over_chunks_matches_binning_whole_arrays(num_blocks):
    """Pools of several chunks, cells of 1, 2 and 10 blocks, sizes that leave the last cell short."""
    from workbench.bench.heatmap_cost import synthetic_snapshot

    snap = synthetic_snapshot(num_blocks, seed=num_blocks)
    assert len(snap.chunks["states"]) > 1
    per_cell, rows, columns = grid_shape(num_blocks)
    padded = rows * columns * per_cell
    states = np.zeros(padded, np.uint8)
    states[:num_blocks] = snap.states
    changed = np.zeros(padded, np.bool_)
    changed[:num_blocks] = snap.changed_at > 1
    expected = (states.reshape(-1, per_cell).max(axis=1) + 5 * changed.reshape(-1, per_cell).any(axis=1))
    expected[-(-num_blocks // per_cell):] = NO_BLOCK  # the cells past the pool's end hold no block
    assert np.array_equal(heatmap_image(snap, since_version=1), expected.reshape(rows, columns))
    assert heatmap_image(snap, since_version=1).dtype == np.uint8


def test_regenerate_drops_the_last_reply_and_keeps_the_question():
    conversation = Conversation("Chat 1")
    request, reply = conversation.ask("Hi", "Be brief.", SamplingSettings())
    reply.text, reply.status = "Hello", "done"
    again, new_reply = conversation.regenerate("Be brief.", SamplingSettings())
    assert [m.role for m in again.messages] == ["system", "user"]
    assert conversation.messages == [conversation.messages[0], new_reply] and new_reply.status == "streaming"
    assert again.request_id != request.request_id


def test_memory_check_summary_gives_the_largest_differences(tmp_path):
    from workbench.bench.memory_check import FIELDS, summary

    rows = [
        {"time_s": "1.0", "gpu": "0", "nvml_used_mib": "0", "smi_used_mib": "0"},
        {"time_s": "6.0", "gpu": "0", "nvml_used_mib": "58700", "smi_used_mib": "58702"},
        {"time_s": "6.0", "pid": "41", "nvml_process_mib": "58584", "smi_process_mib": "58584"},
    ]
    path = tmp_path / "memory.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    text = summary(path)
    assert "2 device samples (peak 58,700 MiB used), largest difference 2 MiB" in text
    assert "1 process samples, largest difference 0 MiB" in text


def test_hf_baseline_tries_doubling_batch_sizes_until_the_time_box():
    from workbench.bench.hf_baseline import HFResult, batch_sizes, time_box_reason

    assert batch_sizes(1) == [1] and batch_sizes(32) == [1, 2, 4, 8, 16, 32]
    assert batch_sizes(100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert time_box_reason(1, None, 0.0, 1.0) == ""  # batch 1 always runs
    batch_8 = HFResult(8, 256, elapsed_s=10.0, ttft_s=0.1, peak_memory_bytes=None)
    assert time_box_reason(16, batch_8, spent_s=25.0, time_box_s=60.0) == ""  # about 20 s: ends at 45 s
    reason = time_box_reason(16, batch_8, spent_s=45.0, time_box_s=60.0)
    assert reason.startswith("about 20 s (batch 8 took 10.0 s)") and "60 s time box" in reason


def test_app_attribution_parts_are_checked():
    import argparse

    from workbench.bench.cli import _app_parts

    assert _app_parts("heatmap, chat") == {"heatmap", "chat"}
    assert _app_parts("plots") == {"plots"}
    with pytest.raises(argparse.ArgumentTypeError, match="unknown part.*'plot'.*choose from heatmap, chat"):
        _app_parts("heatmap,plot")


def test_a_stats_bin_shows_the_busiest_step_of_a_request_that_ended_within_it():
    """The last step of a finished request reports its blocks freed: the bin still shows it ran."""
    from workbench.engine.stats import StatsRecorder, StepStats

    recorder = StatsRecorder(0.0, bin_s=0.25)
    for running, usage in ((1, 0.004), (1, 0.005), (0, 0.0)):
        recorder.add(StepStats(running, 0, usage, 0, 0, 0, 1, 0))
    assert recorder.tick(0.25, idle=True)
    assert recorder.tick(0.5, idle=True)  # nothing ran in the second bin
    series = recorder.publish().series
    assert list(series["kv_usage_pct"]) == pytest.approx([0.5, 0.0])
    assert list(series["num_running"]) == [1, 0]


def test_the_heatmap_grid_takes_the_views_shape():
    """Square cells fill a tall or a wide view: columns over rows follows width over height (1:4 to 4:1)."""
    for aspect in (0.25, 0.5, 1.0, 2.0, 4.0):
        per_cell, rows, columns = grid_shape(120_000, aspect=aspect)
        assert rows * columns * per_cell >= 120_000
        assert columns / rows == pytest.approx(aspect, rel=0.05)
    assert grid_shape(120_000, aspect=100.0) == grid_shape(120_000, aspect=4.0)
    assert grid_shape(1024) == (1, 32, 32)


def test_the_engine_core_joins_a_single_threaded_worker_only_where_one_core_is_spare():
    from workbench.engine.placement import cores_for_engine_core

    assert cores_for_engine_core([{0}], {0, 1}) == {0}  # vLLM's CPU build on two cores
    assert cores_for_engine_core([{0}, {1}], {0, 1, 2}) == {0, 1}  # two single-core workers, one core spare
    assert cores_for_engine_core([{0, 1, 2}], {0, 1, 2, 3}) is None  # OpenMP threads spin between steps
    assert cores_for_engine_core([{0}], {0, 1, 2}) is None  # cores enough for the scheduler and the app
    assert cores_for_engine_core([], {0, 1}) is None  # no bound worker: a GPU, or the model in the engine core
    assert cores_for_engine_core([{0}, {0}], {0, 1}) is None  # workers crowded onto one core


def test_installer_names_the_disk_and_the_fix_when_space_is_short(tmp_path):
    """A first install that cannot fit stops before pip starts, not half-way with [Errno 28]."""
    import importlib.util
    from collections import namedtuple

    spec = importlib.util.spec_from_file_location("install_script", ROOT / "packaging/install.py")
    install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install)
    usage = namedtuple("usage", "total used free")
    venv, temp = tmp_path / "project" / ".venv", tmp_path / "tmp"
    temp.mkdir()
    one_disk = {"device_of": lambda path: 1}
    message = install.space_problem("cpu", venv, temp, disk_usage=lambda path: usage(0, 0, 5 * install.GIB), **one_disk)
    assert message is not None and f"5.0 GiB free where {venv} and {temp} are" in message
    assert "6.0 GiB" in message and "TMPDIR" in message  # the venv and pip's unpacking share that disk
    assert install.space_problem("cpu", venv, temp, disk_usage=lambda path: usage(0, 0, 7 * install.GIB), **one_disk) is None
    # two disks: each is asked only for its own part
    two_disks = {"device_of": lambda path: 2 if path == temp else 1}
    small_temp = lambda path: usage(0, 0, (1 if path == temp else 50) * install.GIB)  # noqa: E731
    message = install.space_problem("cpu", venv, temp, disk_usage=small_temp, **two_disks)
    assert message is not None and f"where {temp} is" in message and "1.5 GiB" in message
    assert install.space_problem("cuda", venv, temp, disk_usage=lambda path: usage(0, 0, 10 * install.GIB),
                                 **two_disks).startswith("install: 10.0 GiB free where")


def test_the_switch_target_is_judged_on_the_preset_that_the_cold_start_starts_too(tmp_path):
    """A switch to a preset compiled before is held against the cold start of it (the same compile
    cache state); a first switch to another preset compiles its graphs and is listed, not judged."""
    import json

    from workbench.bench.preset_bench import read_switch_rows, switch_verdict

    def row(step, preset, start_s, engine_gib):
        return dict(step=step, preset=preset, start_s=start_s, app_rss_bytes=1 << 30, engine_bytes=engine_gib << 30,
                    engine_scope="NVML", num_kv_blocks=1000)

    rows = [row(0, "balanced", 125.5, 100), row(1, "low-latency", 84.0, 100), row(2, "balanced", 50.9, 101),
            dict(cold_start_s=68.3, preset="balanced")]
    log = tmp_path / "switches.log"
    log.write_text("INFO something\n" + "".join(json.dumps(r) + "\n" for r in rows))
    assert read_switch_rows(log) == rows
    text = "\n".join(switch_verdict(rows))
    assert "Switch 2 back to balanced (compiled before, as for the cold start): 50.9 s; target at most cold + 5 s " \
           "= 73.3 s: met" in text
    assert "low-latency 84.0 s" in text and "+0.99% of its first start; target within 2 %: met" in text
    slow = rows[:2] + [row(2, "balanced", 80.0, 110), rows[3]]
    text = "\n".join(switch_verdict(slow))
    assert "80.0 s; target at most cold + 5 s = 73.3 s: NOT met" in text and "target within 2 %: NOT met" in text
    assert "cannot be judged" in "\n".join(switch_verdict(rows[:2] + rows[3:]))
