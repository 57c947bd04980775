"""No vLLM process outlives the app, even when the app is killed; leftovers are reaped at start."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


# A process that asks to die with its parent only after that parent has gone (an engine core still
# importing vLLM when the app was killed): the grandchild waits until it has been handed to another
# parent, then asks, naming the parent that started it.
ORPHAN = '''
import os, subprocess, sys, time
if sys.argv[1] == "middle":
    child = subprocess.Popen([sys.executable, "-c", sys.argv[2], "child", str(os.getpid()), sys.argv[3]],
                             stdout=subprocess.DEVNULL)
    print(child.pid, flush=True)
else:
    started_by, report = int(sys.argv[2]), sys.argv[3]
    deadline = time.monotonic() + 10
    while os.getppid() == started_by and time.monotonic() < deadline and sys.argv[1] == "child":
        time.sleep(0.01)
    from workbench.engine.vllm_plugin.process_life import die_with_parent
    die_with_parent(started_by if sys.argv[1] == "child" else os.getppid())
    open(report, "w").write("still running")
    time.sleep(30)
'''


def test_an_engine_process_whose_parent_died_before_it_asked_to_die_with_it_ends(tmp_path):
    report = tmp_path / "orphan.txt"
    middle = subprocess.run([sys.executable, "-c", ORPHAN, "middle", ORPHAN, str(report)], capture_output=True,
                            text=True, timeout=60)
    orphan = int(middle.stdout.split()[0])  # its parent, "middle", has exited
    try:
        deadline = time.monotonic() + 20
        while pid_alive(orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(orphan) and not report.exists(), "the orphan ran on"
    finally:
        if pid_alive(orphan):
            os.kill(orphan, signal.SIGKILL)

    kept = subprocess.Popen([sys.executable, "-c", ORPHAN, "alive", str(os.getpid()), str(report)])
    try:  # a parent that lives: the process runs on
        deadline = time.monotonic() + 20
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert report.read_text() == "still running" and kept.poll() is None
    finally:
        kept.kill()
        kept.wait()


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, reaped by whoever adopted it, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
def test_engine_processes_die_with_a_killed_app(tmp_path, demo_model_path):
    assert killed_app_leaves(HEADLESS_APP, tmp_path, demo_model_path) == [], "engine processes outlived the killed app"


ENGINE_FILES_APP = '''
import os, sys, time
if __name__ == "__main__":
    from workbench.engine.session import EngineSession
    from workbench.engine.spec import EngineConfig
    config = EngineConfig(model=sys.argv[1], num_gpu_blocks_override=256)
    for last in (False, True):
        session = EngineSession(config)
        session.start(lambda progress: None)
        folder = session.run_folder
        print("STARTED", folder, *sorted(p.name for p in folder.iterdir()), flush=True)
        print("ENV", *(name in os.environ for name in ("VLLM_RPC_BASE_PATH", "WORKBENCH_PHASE_FILE")), flush=True)
        if last:
            time.sleep(600)
        session.shutdown()
        print("STOPPED", folder.exists(), flush=True)
'''


def sockets_under(folder) -> list:
    return [path for path in folder.rglob("*") if path.is_socket()]


@pytest.mark.slow
def test_an_engines_files_go_with_it_and_a_killed_apps_at_the_next_start(tmp_path, demo_model_path, monkeypatch,
                                                                          request):
    """vLLM's socket files and the start's phase file are made in the engine's run folder, which goes as the
    engine stops; the folder of an app killed with its engine running is removed at the next start, and a
    live app's is spared. The app's temp folder is the test's own, so that nothing else is counted."""
    import shutil
    import tempfile

    from workbench.engine.run_folder import new_run_folder, remove_leftovers

    temp = Path(tempfile.mkdtemp(prefix="wbt-"))  # short: a socket's path holds 107 bytes
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    script = tmp_path / "engine_files_app.py"
    script.write_text(ENGINE_FILES_APP)
    env = {key: value for key, value in os.environ.items() if key != "VLLM_RPC_BASE_PATH"}
    app = subprocess.Popen([sys.executable, str(script), demo_model_path], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env={**env, "TMPDIR": str(temp)})
    try:
        lines = []
        while len(lines) < 5 and (line := app.stdout.readline()):
            if line.startswith(("STARTED", "ENV", "STOPPED")):  # not vLLM's own lines
                lines.append(line.split())
        assert [line[0] for line in lines] == ["STARTED", "ENV", "STOPPED", "STARTED", "ENV"], lines
        assert lines[1] == ["ENV", "False", "False"], "what the engine's processes inherited is not left set after"
        first, second = lines[0][1], lines[3][1]
        assert first != second and all(os.path.dirname(f) == str(temp) for f in (first, second))
        assert {"owner", "phases.log"} < set(lines[0][2:]), "vLLM's sockets are in the run folder, beside these"
        assert lines[2] == ["STOPPED", "False"], "the stopped engine's folder is gone"
        assert sockets_under(temp) and all(str(p).startswith(second) for p in sockets_under(temp))
        app.send_signal(signal.SIGKILL)
        app.wait(10)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    live = new_run_folder()  # this process's: its app runs
    assert [str(f) for f in remove_leftovers()] == [second]
    assert live.exists() and sockets_under(temp) == []
    remove_leftovers()
    assert live.exists(), "a live app's folder is spared"


LONG_TEMP_APP = '''
import sys
if __name__ == "__main__":
    from workbench.engine.session import EngineSession
    from workbench.engine.spec import EngineConfig
    from workbench.engine.start_phases import EngineStartError
    try:
        EngineSession(EngineConfig(model=sys.argv[1], num_gpu_blocks_override=256)).start(lambda progress: None)
    except EngineStartError as error:
        print("FAILED", str(error).replace(chr(10), " "), flush=True)
'''


@pytest.mark.slow
def test_a_temp_folder_too_long_for_vllms_sockets_is_named_with_what_to_do(tmp_path, demo_model_path):
    temp = tmp_path / ("long-" * 16)  # vLLM's own sockets could not be made there either
    temp.mkdir()
    script = tmp_path / "long_temp_app.py"
    script.write_text(LONG_TEMP_APP)
    env = {key: value for key, value in os.environ.items() if key != "VLLM_RPC_BASE_PATH"}
    done = subprocess.run([sys.executable, str(script), demo_model_path], capture_output=True, text=True,
                          env={**env, "TMPDIR": str(temp)}, timeout=240)
    said = next((line for line in done.stdout.splitlines() if line.startswith("FAILED")), done.stderr[-2000:])
    assert "longer than a socket's path may be (107 bytes)" in said, said
    assert f"vLLM makes its socket files in {temp}. Set TMPDIR" in said and "ipc path" in said, "and vLLM's words"
    assert not list(temp.glob("wbrun-*")), "the failed start's run folder is gone"


def test_vllms_sockets_stay_where_vllm_puts_them_where_the_run_folder_has_no_room_or_the_user_chose(monkeypatch):
    from workbench.engine.run_folder import RPC_PATH_ENV, vllm_env

    monkeypatch.delenv(RPC_PATH_ENV, raising=False)
    assert vllm_env(Path("/tmp/wbrun-abcd1234")) == {RPC_PATH_ENV: "/tmp/wbrun-abcd1234"}
    assert vllm_env(Path("/tmp/" + "x" * 60 + "/wbrun-abcd1234")) == {}, "107 bytes a socket's path"
    monkeypatch.setenv(RPC_PATH_ENV, "/home/someone/sockets")
    assert vllm_env(Path("/tmp/wbrun-abcd1234")) == {}, "the user's own choice"


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


def test_a_live_apps_processes_are_spared_when_the_wall_clock_moves(monkeypatch):
    """NTP steps or slews the clock, so the boot time that ``/proc/stat`` gives moves by a second now
    and then; the app's tag, taken at its start, must still name it as alive an hour later."""
    import psutil._pslinux as pslinux

    ours = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: owner_tag()})
    real_boot_time = pslinux.boot_time
    monkeypatch.setattr(pslinux, "boot_time", lambda: real_boot_time() + 1.0)
    try:
        assert ours.pid not in reap_orphans()
        assert ours.poll() is None, "the reaper killed a live app's process"
    finally:
        if ours.poll() is None:
            ours.kill()
        ours.wait()


def test_an_earlier_versions_live_app_is_spared():
    """A tag written by an earlier version (the wall-clock start time) still names a live app."""
    import psutil

    legacy_tag = f"{os.getpid()}:{psutil.Process().create_time() + 1.0:.2f}"  # the clock moved a second since
    ours = subprocess.Popen(["sleep", "300"], env={**os.environ, OWNER_ENV: legacy_tag})
    try:
        assert ours.pid not in reap_orphans()
        assert ours.poll() is None
    finally:
        ours.kill()
        ours.wait()


def test_a_phase_file_that_is_gone_costs_the_progress_shown_never_the_start(tmp_path, monkeypatch):
    """A process started with a phase file named in its environment (an engine's, a served vLLM's) writes its
    phases there as it starts; a file that cannot be written is passed over."""
    from workbench.engine.vllm_plugin.phase_hooks import PHASE_FILE_ENV, write_phase

    monkeypatch.setenv(PHASE_FILE_ENV, str(tmp_path / "gone" / "phases.log"))
    write_phase("weights")  # no error
    monkeypatch.setenv(PHASE_FILE_ENV, str(tmp_path / "phases.log"))
    write_phase("weights", "a\nb")
    assert (tmp_path / "phases.log").read_text().split("\t")[::2] == ["weights", "a b\n"]
