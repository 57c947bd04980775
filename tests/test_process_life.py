"""No vLLM process outlives the app, even when the app is killed; leftovers are reaped at start."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from workbench.engine.vllm_plugin.process_life import OWNER_ENV
from killed_app import killed_app_leaves
from workbench.engine.process_guard import owner_tag, reap_orphans

HEADLESS_APP = '''
import sys, time
if __name__ == "__main__":
    from workbench.engine.session import EngineSession
    from workbench.engine.spec import EngineConfig
    session = EngineSession(EngineConfig(model=sys.argv[1], num_gpu_blocks_override=256))
    session.start(lambda progress: None)
    print("READY", *session.engine_pids, flush=True)
    time.sleep(600)
'''


@pytest.mark.slow
def test_engine_processes_die_with_a_killed_app(tmp_path, demo_model_path):
    assert killed_app_leaves(HEADLESS_APP, tmp_path, demo_model_path) == [], "engine processes outlived the killed app"


def test_reaper_kills_leftovers_of_a_dead_app_and_spares_live_ones():
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait()
    dead_tag = f"{dead_owner.pid}:12345.00"
    leftover = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: dead_tag})
    ours = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: owner_tag()})
    try:
        reaped = reap_orphans()
        assert leftover.pid in reaped
        assert leftover.wait(10) == -signal.SIGKILL
        assert ours.pid not in reaped and ours.poll() is None
    finally:
        for process in (leftover, ours):
            if process.poll() is None:
                process.kill()
                process.wait()
