"""The engine layer without Qt: block tracking taken out and put back stays exact against a scan."""
from __future__ import annotations

import numpy as np

from workbench.engine.backend import ChatRequest, SamplingSettings
from workbench.engine.kv_snapshot import BLOCK_STATE_IN_USE, BLOCK_STATE_SHARED
from workbench.engine.session import EngineConfig, EngineSession


def _step(session: EngineSession, times: int) -> None:
    for _ in range(times):
        if session.has_work():
            session.step()


def test_tracking_removed_and_restored_matches_a_full_scan(demo_model_path):
    session = EngineSession(EngineConfig(model=demo_model_path, max_model_len=512, max_num_seqs=8,
                                         kv_cache_memory_bytes=64 << 20))
    session.start(lambda progress: None)
    try:
        sampling = SamplingSettings(temperature=0.0, max_tokens=80, ignore_eos=True)
        shared_prefix = list(range(20, 20 + 96))  # three full blocks that both requests share
        for i in range(2):
            prompt = shared_prefix + [200 + i] * 40
            session.submit(ChatRequest(f"r{i}", (), sampling, prompt_token_ids=tuple(prompt)))
        _step(session, 3)
        first = session.kv_snapshot(check_with_scan=True)
        assert first.scan_problems == ()
        assert first.counts[BLOCK_STATE_SHARED] >= 3 and first.counts[BLOCK_STATE_IN_USE] >= 2
        assert set(first.tables) == {"r0", "r1"}

        session.stop_kv_tracking()  # blocks now change with nobody watching
        _step(session, 40)
        again = session.kv_snapshot(check_with_scan=True)  # a full resync, then deltas as before
        assert again.scan_problems == ()
        assert again.version == 1 and len(again.tables["r0"]) > len(first.tables["r0"])

        _step(session, 200)  # both finish: their blocks go back to the pool, hashed ones stay cached
        assert not session.has_work()
        last = session.kv_snapshot(check_with_scan=True)
        assert last.scan_problems == ()
        assert dict(last.tables) == {} and last.num_in_use == 0
        assert np.count_nonzero(last.hashed) >= 3
    finally:
        session.shutdown()
