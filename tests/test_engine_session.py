"""The engine layer without Qt: block tracking taken out and put back stays exact against a scan;
the benchmarks' session records when each request's tokens arrive; the engine core placed as
``engine/placement.py`` decides; a prompt of a few tokens as a new engine's first."""
from __future__ import annotations

import os

import numpy as np
import pytest

from workbench.bench.engine_bench import BenchSession
from workbench.engine.backend import ChatRequest, SamplingSettings, wait_for_snapshot
from workbench.engine.kv_snapshot import BLOCK_STATE_IN_USE, BLOCK_STATE_SHARED
from workbench.engine.placement import cores_for_engine_core
from workbench.engine.session import EngineSession
from workbench.engine.spec import EngineConfig


def _step(session: EngineSession, times: int) -> None:
    for _ in range(times):
        if session.has_work():
            session.step()


@pytest.mark.slow
def test_tracking_removed_and_restored_matches_a_full_scan(demo_model_path):
    session = BenchSession(EngineConfig(model=demo_model_path, max_model_len=512, max_num_seqs=8,
                                         kv_cache_memory_bytes=64 << 20))
    session.start(lambda progress: None)
    try:
        workers = {w.pid for w in session.workers}
        worker_cores = [set(os.sched_getaffinity(pid)) for pid in workers]
        expected = cores_for_engine_core(worker_cores, set(os.sched_getaffinity(0)))
        assert set(session.engine_core_cores) == (expected or set())
        for pid in set(session.engine_pids) - workers:  # the engine core, each of its threads
            for tid in os.listdir(f"/proc/{pid}/task"):
                if expected:
                    assert os.sched_getaffinity(int(tid)) == expected
        sampling = SamplingSettings(temperature=0.0, max_tokens=80, ignore_eos=True)
        shared_prefix = list(range(20, 20 + 96))  # three full blocks that both requests share
        for i in range(2):
            prompt = shared_prefix + [200 + i] * 40
            session.submit(ChatRequest(f"r{i}", (), sampling, prompt_token_ids=tuple(prompt)))
        _step(session, 3)
        first = wait_for_snapshot(session.probe, check_with_scan=True)
        assert first.scan_problems == ()
        assert first.counts[BLOCK_STATE_SHARED] >= 3 and first.counts[BLOCK_STATE_IN_USE] >= 2
        assert set(first.tables) == {"r0", "r1"}

        session.stop_kv_tracking()  # blocks now change with nobody watching
        with session.recording_arrivals() as arrivals:
            _step(session, 40)
        assert set(arrivals) == {"r0", "r1"}
        for request in arrivals.values():  # one new token a step while decoding, in time order
            assert 30 <= sum(count for _, count in request) <= 40
            assert [t for t, _ in request] == sorted(t for t, _ in request)
        recorded = {rid: len(request) for rid, request in arrivals.items()}
        _step(session, 1)
        assert {rid: len(request) for rid, request in arrivals.items()} == recorded  # ended with the block
        again = wait_for_snapshot(session.probe, check_with_scan=True)  # a full resync, then deltas as before
        assert again.scan_problems == ()
        assert again.version == 1 and len(again.tables["r0"]) > len(first.tables["r0"])

        _step(session, 200)  # both finish: their blocks go back to the pool, hashed ones stay cached
        assert not session.has_work()
        last = wait_for_snapshot(session.probe, check_with_scan=True)
        assert last.scan_problems == ()
        assert dict(last.tables) == {} and last.num_in_use == 0
        assert np.count_nonzero(last.hashed) >= 3
    finally:
        session.shutdown()


@pytest.mark.slow
def test_an_engines_first_prompt_may_be_a_few_tokens(demo_model_path):
    """vLLM 0.32's CPU worker died with SIGILL when its first batch was 4 prompt tokens or fewer on a
    CPU with AMX (``vllm_plugin/cpu_features``); each prompt here is the first of a new engine."""
    for length in (3, 1):
        session = BenchSession(EngineConfig(model=demo_model_path, max_model_len=512, max_num_seqs=8,
                                             kv_cache_memory_bytes=64 << 20))
        session.start(lambda progress: None)
        try:
            sampling = SamplingSettings(temperature=0.0, max_tokens=8, ignore_eos=True)
            session.submit(ChatRequest("short", (), sampling, prompt_token_ids=tuple(range(20, 20 + length))))
            with session.recording_arrivals() as arrivals:
                _step(session, 40)
            assert not session.has_work()
            assert sum(count for _, count in arrivals["short"]) == 8
        finally:
            session.shutdown()


def test_plugin_mirror_small_and_large_deltas_match_a_scan():
    """The engine-side mirror on vLLM's real ``KVCacheBlock``, in this process: deltas read item by
    item (a few blocks) and through numpy (thousands, as when 256 requests finish at once)."""
    import types

    from vllm.v1.core.kv_cache_utils import KVCacheBlock

    from workbench.engine.vllm_plugin import block_tracking, kv_methods

    blocks = [KVCacheBlock(i) for i in range(6000)]
    blocks[0].is_null = True
    mirror = block_tracking.PoolMirror(types.SimpleNamespace(blocks=blocks))
    try:
        assert mirror.tracking
        mirror.resync()

        def check(expected_changed: set[int], changes) -> None:
            ids = set(np.frombuffer(changes[0], np.int32).tolist())
            assert ids == expected_changed
            state, ref, hashed = kv_methods._scan_python(blocks)
            assert bytes(mirror.state) == state.tobytes() and mirror.ref.tobytes() == ref.tobytes()
            assert bytes(mirror.hashed) == hashed.tobytes()
            assert mirror.counts == np.bincount(state, minlength=5).tolist()

        for i in (5, 6, 7):
            blocks[i].ref_cnt = 2 if i == 5 else 1
        blocks[7]._block_hash = b"h7"
        blocks[8].ref_cnt = 1
        blocks[8].ref_cnt = 0  # written twice, back where it was: not a change
        check({5, 6, 7}, mirror.changes())
        assert len(block_tracking.dirty_block_ids) == 0

        for block in blocks[100:5100]:  # above _VECTOR_FROM: the numpy path
            block.ref_cnt = 1
            block._block_hash = b"h"
        blocks[5].ref_cnt = 0
        check(set(range(100, 5100)) | {5}, mirror.changes())
    finally:
        block_tracking.uninstall_dirty_tracking(KVCacheBlock)
    assert type(KVCacheBlock.__dict__["ref_cnt"]).__name__ == "member_descriptor"
