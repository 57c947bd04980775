"""Model > Get a model…, end to end, with the real huggingface_hub client against the tests' Hub on
127.0.0.1 (olah, with the stand-in for what olah lacks: tests/hub_server.py): search, the will-it-fit
answer before a byte of weights moves, the download with its faults (cancel, the app killed, the network
gone, the disk full, a damaged file, a model already cached), the cache listed and deleted, and the
window's dialog. The demo model is one of the repos: downloaded, it loads by its repo id."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hub_server import (QWEN25_7B_PARAMETERS, add_repo, hub_fixture, point_client_at, qwen7b_shaped_files,
                        tiny_repo_files)

from workbench.hub.download import CANCELLED, DONE, FAILED, DiskSpaceError, Downloads, check_space, unfinished
from workbench.hub.errors import HubError
from workbench.hub.remote_model import download_plan, look_up
from workbench.hub.repo_id import HubInputError

pytestmark = pytest.mark.timeout(240)

TINY, QWEN, GATED, DEMO = "tiny-org/tiny-model", "Qwen/Qwen2.5-7B-Instruct", "gated-org/gated-model", "workbench/demo"
SLOW, GGUF, BIN, ODD = "tiny-org/slow-model", "gguf-org/only-gguf", "bin-org/only-bin", "odd-org/odd-arch"
TOKEN = "hf_testtoken0123456789"
SUPPORTED = frozenset({"Qwen2ForCausalLM", "LlamaForCausalLM"})  # a part of vLLM's registry, for speed
SLOW_WEIGHTS_KIB = 3072  # sent at 64 KiB a 0.05 s: about 2.4 s for the whole file


def _folder(work: Path, name: str, files: dict[str, bytes | str]) -> Path:
    folder = work / name
    folder.mkdir(parents=True)
    for file, content in files.items():
        (folder / file).write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def build_repos(server, work):
    from workbench.engine.demo_model import ensure_demo_model

    add_repo(server, TINY, tiny_repo_files(work / "src-tiny"))
    add_repo(server, SLOW, tiny_repo_files(work / "src-slow", weights_kib=SLOW_WEIGHTS_KIB))
    server.pace[f"{SLOW}/model.safetensors"] = 0.05
    add_repo(server, QWEN, qwen7b_shaped_files(work / "src-qwen"))
    add_repo(server, GATED, tiny_repo_files(work / "src-gated", weights_kib=4), gated_token=TOKEN)
    config = json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"})
    add_repo(server, GGUF, _folder(work, "src-gguf", {"config.json": config, "model-q4_k_m.gguf": b"GGUF" * 64}))
    add_repo(server, BIN, _folder(work, "src-bin", {"config.json": config, "pytorch_model.bin": b"\x80" * 256}))
    odd = tiny_repo_files(work / "src-odd", weights_kib=4)
    (odd / "config.json").write_text(json.dumps({"architectures": ["NoSuchModelForCausalLM"], "model_type": "nosuch"}))
    add_repo(server, ODD, odd)
    demo = work / "src-demo"
    shutil.copytree(ensure_demo_model(), demo)
    add_repo(server, DEMO, demo)


hub = hub_fixture(build_repos)


@pytest.fixture
def cache(hub, tmp_path, monkeypatch):
    """The client pointed at the module's Hub with an empty cache of its own; the data folder (the
    downloads' journal) is the test's too."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    return point_client_at(monkeypatch, hub.endpoint, tmp_path / "hf-home")


def _blob_hashes(cache: Path, repo: str) -> dict[str, str]:
    snapshot = next((cache / ("models--" + repo.replace("/", "--")) / "snapshots").iterdir())
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in snapshot.iterdir()}


def _weights_gets(hub, repo: str, name: str = "model.safetensors") -> int:
    """GETs of the whole file or of its rest (not the safetensors header reads of a look-up)."""
    return sum(1 for line in hub.requests() if line.startswith("GET") and f"{repo}/resolve" in line and name in line
               and not line.rstrip().endswith("bytes=0-100000"))


def _wait_for(condition, timeout_s: float = 60.0, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step_s)


# ------------------------------------------------------------------ search and will it fit
def test_search_lists_text_generation_models_with_their_figures(cache):
    from workbench.hub.search import search_models

    found = {item.repo_id: item for item in search_models("org", SUPPORTED)}
    assert {TINY, SLOW, GATED, ODD} <= set(found)
    tiny = found[TINY]
    assert tiny.architectures == ("Qwen2ForCausalLM",) and tiny.runs_here is True and not tiny.gated
    assert tiny.parameters and tiny.dtype == "F32" and tiny.weights_bytes == tiny.parameters * 4
    assert found[GATED].gated and found[ODD].runs_here is False
    only = {item.repo_id for item in search_models("org", SUPPORTED, only_runs_here=True)}
    assert ODD not in only and TINY in only


def test_the_7b_shape_is_sized_up_from_its_headers_without_its_weights(cache):
    from workbench.engine.spec import EngineConfig
    from workbench.hub.fit import will_it_fit
    from workbench.presets.machine import Machine

    remote = look_up(QWEN, supported=SUPPORTED)
    assert remote.parameters == QWEN25_7B_PARAMETERS and remote.dtypes == (("BF16", QWEN25_7B_PARAMETERS),)
    shards = sorted(f.name for f in remote.choice.files if f.name.endswith(".safetensors"))
    assert len(shards) == 4 and remote.problem is None and remote.revision
    listed = sum(f.size for f in remote.choice.files if f.name.endswith(".safetensors"))
    assert remote.facts.weights_bytes == listed, "the shards' sizes, as the Hub lists them"
    assert 0 < listed - 2 * QWEN25_7B_PARAMETERS < 64 << 10, "two bytes a BF16 parameter, and the headers"
    assert not list(cache.rglob("*.safetensors")), "no weights fetched: only config.json"
    h200 = Machine("cuda", 1, 143_771 << 20, 143_771 << 20, 2 << 40)
    answer = will_it_fit(EngineConfig("x", gpu_memory_utilization=0.9), remote.facts, h200)
    assert answer.fits and answer.plan.kv_bytes_per_token == 57_344 and answer.max_len_that_fits == 32_768


@pytest.mark.parametrize("repo, error, words", [
    ("nobody/no-such-model", HubError, "No model nobody/no-such-model"),
    ("../escape", HubInputError, "without '..'"),
    ("https://huggingface.co/datasets/openai/gsm8k", HubInputError, "a dataset's page on the Hub, not a model's"),
    (GATED, HubError, "is gated: accept its licence"),
])
def test_what_cannot_be_sized_up_says_why_and_what_to_do(cache, repo, error, words):
    with pytest.raises(error, match=words.replace(".", r"\.").replace("(", r"\(")):
        look_up(repo, supported=SUPPORTED)


def test_a_gated_repo_with_a_wrong_token_then_the_right_one(cache):
    with pytest.raises(HubError, match="may not read") as wrong:
        look_up(GATED, token="hf_wrong", supported=SUPPORTED)
    assert wrong.value.needs_token
    assert look_up(GATED, token=TOKEN, supported=SUPPORTED).choice.weights_format == "safetensors"


def test_gguf_only_bin_only_and_an_architecture_vllm_lacks(cache):
    assert "GGUF files only" in look_up(GGUF, supported=SUPPORTED).problem
    bins = look_up(BIN, supported=SUPPORTED)
    assert bins.problem is None and bins.choice.weights_format == "bin" and "pickle" in bins.choice.note
    assert "does not run NoSuchModelForCausalLM" in look_up(ODD, supported=SUPPORTED).problem


# ------------------------------------------------------------------ the download and its faults
def test_a_download_fetches_what_vllm_needs_checks_it_and_a_second_fetches_nothing(hub, cache):
    from workbench.engine.model_source import resolve_model
    from workbench.hub.cache_list import cached_models

    remote = look_up(DEMO, supported=SUPPORTED)
    downloads = Downloads()
    progress = downloads.start(download_plan(remote)).wait(120)
    assert progress.state == DONE and progress.done_bytes == progress.total_bytes, progress.message
    hashes = _blob_hashes(cache, DEMO)
    assert {f.name for f in remote.choice.files} == set(hashes)
    assert all(hashes[f.name] == f.sha256 for f in remote.choice.files if f.sha256), "the Hub's SHA-256"
    assert resolve_model(DEMO) == progress.snapshot, "the command line's --model workbench/demo loads it"
    from workbench.engine.model_source import list_models

    assert ("workbench/demo", "hf-cache") in [(c.path, c.origin) for c in list_models()], "and the picker lists it"
    assert [m.repo_id for m in cached_models()] == [DEMO] and not cached_models()[0].incomplete
    gets = _weights_gets(hub, DEMO)
    again = Downloads().start(download_plan(look_up(DEMO, supported=SUPPORTED))).wait(60)
    assert again.state == DONE and _weights_gets(hub, DEMO) == gets, "a cached model is not fetched again"
    assert not unfinished()


def test_cancel_stops_within_two_seconds_and_resume_goes_on_from_what_arrived(hub, cache):
    plan = download_plan(look_up(SLOW, supported=SUPPORTED))
    download = Downloads().start(plan)
    _wait_for(lambda: download.progress().done_bytes > 256 << 10)
    asked = time.monotonic()
    download.cancel()
    stopped = download.wait(5)
    assert stopped.state == CANCELLED and time.monotonic() - asked < 2.0
    assert 0 < stopped.done_bytes < plan.total_bytes and [p.repo_id for p in unfinished()] == [SLOW]
    resumed = Downloads().start(plan).wait(60)
    assert resumed.state == DONE and not unfinished()
    weights = next(f for f in plan.files if f.name == "model.safetensors")
    assert _blob_hashes(cache, SLOW)["model.safetensors"] == weights.sha256
    ranges = [line for line in hub.requests() if f"{SLOW}/resolve" in line and "bytes=" in line]
    assert ranges, "the second attempt asked for the rest only (a Range request)"


KILLED_APP = """
import sys, time
from workbench.hub.download import Downloads
from workbench.hub.remote_model import download_plan, look_up
download = Downloads().start(download_plan(look_up(sys.argv[1], supported=frozenset({"Qwen2ForCausalLM"}))))
while download.progress().done_bytes < 256 << 10:
    time.sleep(0.02)
print("PART", download.process.pid, flush=True)
time.sleep(600)
"""


def test_the_app_killed_mid_download_leaves_nothing_running_and_the_next_start_resumes(hub, cache, tmp_path):
    from workbench.engine.process_guard import is_running

    script = tmp_path / "app.py"
    script.write_text(KILLED_APP)
    app = subprocess.Popen([sys.executable, str(script), SLOW], stdout=subprocess.PIPE, text=True, env=os.environ)
    line = app.stdout.readline()
    assert line.startswith("PART"), line
    worker = int(line.split()[1])
    app.kill()
    app.wait()
    _wait_for(lambda: not is_running(worker), 10)
    [plan] = unfinished()
    assert plan.repo_id == SLOW, "the next start offers it"
    done = Downloads().start(plan).wait(60)
    weights = next(f for f in plan.files if f.name == "model.safetensors")
    assert done.state == DONE and _blob_hashes(cache, SLOW)["model.safetensors"] == weights.sha256


def test_the_network_gone_mid_download_fails_with_the_fix_and_resumes_when_back(hub, cache):
    plan = download_plan(look_up(SLOW, supported=SUPPORTED))
    download = Downloads().start(plan)
    _wait_for(lambda: download.progress().done_bytes > 256 << 10)
    hub.kill()
    try:
        failed = download.wait(90)
    finally:
        hub.start()
    assert failed.state == FAILED and "Resume goes on from what arrived" in failed.message, failed.message
    assert Downloads().start(plan).wait(60).state == DONE


def test_a_download_that_does_not_fit_the_disk_is_refused_before_it_starts(cache, tmp_path, monkeypatch):
    import workbench.hub.download as download_module

    plan = download_plan(look_up(SLOW, supported=SUPPORTED))
    monkeypatch.setattr(download_module.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10 << 20, 0, 1 << 20))
    with pytest.raises(DiskSpaceError, match=r"needs 0\.\d+ GiB more in .*hf-home/hub.*free .* set HF_HOME"):
        check_space(plan, cache)


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 4 MiB (a real full disk: ENOSPC), where this machine lets the test mount one."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        why = f"a full disk is simulated with a 4 MiB tmpfs, which needs mount: {done.stderr.strip()}"
        not_allowed = any(w in done.stderr.lower() for w in ("permission", "superuser", "not permitted", "denied"))
        if os.environ.get("CI") and not not_allowed:
            pytest.fail(why)
        pytest.skip(why)  # a container or user the kernel does not let mount: said, not hidden
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_disk_full_mid_download_fails_naming_the_folder_and_resumes_once_freed(hub, small_disk, monkeypatch, tmp_path):
    cache = point_client_at(monkeypatch, hub.endpoint, small_disk / "hf-home")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    plan = download_plan(look_up(SLOW, supported=SUPPORTED))
    download = Downloads().start(plan)  # 3 MiB of 4: the check passes
    _wait_for(lambda: download.progress().done_bytes > 128 << 10)
    filler = small_disk / "filler"
    with open(filler, "wb") as stream:  # another program takes the room meanwhile
        try:
            stream.write(b"\0" * (2 << 20))
        except OSError:
            pass
    failed = download.wait(60)
    assert failed.state == FAILED and f"the disk holding {cache} filled up" in failed.message, failed.message
    filler.unlink()
    assert Downloads().start(plan).wait(60).state == DONE


def test_a_damaged_file_is_removed_and_named(hub, cache):
    from dataclasses import replace

    from workbench.hub.download import DownloadPlan

    plan = download_plan(look_up(TINY, supported=SUPPORTED))
    wrong = tuple(replace(f, sha256="0" * 64) if f.name == "model.safetensors" else f for f in plan.files)
    failed = Downloads().start(DownloadPlan(plan.repo_id, plan.revision, wrong)).wait(60)
    assert failed.state == FAILED and "arrived damaged" in failed.message and "download again" in failed.message


def test_a_cached_model_is_deleted_through_huggingface_hub(cache):
    from workbench.hub.cache_list import cached_models, delete_model

    assert Downloads().start(download_plan(look_up(TINY, supported=SUPPORTED))).wait(60).state == DONE
    assert [m.repo_id for m in cached_models()] == [TINY]
    assert delete_model(TINY) > 0 and cached_models() == []


# ------------------------------------------------------------------ the window's dialog
def test_the_dialog_searches_sizes_up_downloads_and_uses_a_model(qtbot, cache, monkeypatch):
    import workbench.ui.hub_dialog as dialog_module
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.presets.machine import Machine
    from workbench.ui.hub_dialog import GetModelDialog

    monkeypatch.setattr(dialog_module, "supported_architectures", lambda: SUPPORTED)
    used = []
    model = AppModel(demo_engine_config())
    dialog = GetModelDialog(model, used.append)
    dialog.machine = Machine("cpu", 0, 0, 0, 32 << 30)
    qtbot.addWidget(dialog)
    dialog.query.setText("demo")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.results.rowCount() > 0, timeout=30_000)
    assert dialog.results.item(0, 0).text() == DEMO and dialog.results.item(0, 8).text() == "yes"
    dialog.results.selectRow(0)
    assert dialog.repo.text() == DEMO
    dialog.size_up()
    qtbot.waitUntil(lambda: dialog.download_button.isEnabled(), timeout=30_000)
    assert "Fits on this machine's memory" in dialog.detail.toPlainText()
    assert not dialog.use_button.isEnabled(), "not downloaded yet"
    dialog.download()
    qtbot.waitUntil(lambda: dialog.use_button.isEnabled(), timeout=120_000)
    assert "done" in dialog.status.text() and not dialog.cancel_button.isEnabled()
    dialog.use_button.click()
    assert used == [DEMO]
    qtbot.waitUntil(lambda: dialog.cached.rowCount() == 1 and not dialog.workers, timeout=30_000)


def test_the_dialog_reads_its_fields_on_the_gui_thread_only(qtbot, cache, monkeypatch):
    """A search reads the token (which may be handed to huggingface_hub's login) and the "Only what vLLM runs"
    box before its work goes off the GUI thread: widgets are never touched from another."""
    import workbench.ui.hub_dialog as dialog_module
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.ui.hub_dialog import GetModelDialog

    monkeypatch.setattr(dialog_module, "supported_architectures", lambda: SUPPORTED)
    dialog = GetModelDialog(AppModel(demo_engine_config()), lambda name: None)
    qtbot.addWidget(dialog)
    read_on, read_token = [], dialog._token
    dialog._token = lambda: (read_on.append(threading.current_thread()), read_token())[1]
    dialog.only_runs.setChecked(False)
    dialog.query.setText("org")
    dialog.search()
    qtbot.waitUntil(lambda: dialog.results.rowCount() > 0 and not dialog.workers, timeout=30_000)
    assert read_on == [threading.main_thread()]
    assert ODD in [dialog.results.item(row, 0).text() for row in range(dialog.results.rowCount())], \
        "the box, unticked, was read: a model vLLM does not run is listed"


def test_the_dialog_names_a_gated_repo_and_asks_for_the_token(qtbot, cache, monkeypatch):
    import workbench.ui.hub_dialog as dialog_module
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.ui.hub_dialog import GetModelDialog

    monkeypatch.setattr(dialog_module, "supported_architectures", lambda: SUPPORTED)
    dialog = GetModelDialog(AppModel(demo_engine_config()), lambda name: None)
    qtbot.addWidget(dialog)
    dialog.repo.setText(GATED)
    dialog.size_up()
    qtbot.waitUntil(lambda: "is gated: accept its licence" in dialog.status.text(), timeout=30_000)
    assert "border" in dialog.token.styleSheet(), "the token field is pointed at"
    dialog.token.setText(TOKEN)
    dialog.size_up()
    qtbot.waitUntil(lambda: dialog.download_button.isEnabled(), timeout=30_000)
    kept = [p for p in (Path(os.environ["WORKBENCH_DATA_DIR"]), Path(os.environ["HF_HOME"])) if p.exists()]
    written = [f for folder in kept for f in folder.rglob("*") if f.is_file()]
    assert not any(TOKEN.encode() in f.read_bytes() for f in written), "the token is kept nowhere"
    qtbot.waitUntil(lambda: not dialog.workers, timeout=30_000)  # nothing of the dialog's left running


def test_offline_mode_is_honoured_and_said(cache, monkeypatch):
    from huggingface_hub import constants

    from workbench.hub.settings import hub_settings

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert "Offline: HF_HUB_OFFLINE is set" in " · ".join(hub_settings().lines())
    with pytest.raises(HubError, match="HF_HUB_OFFLINE is set, so nothing is asked of the Hub"):
        look_up(TINY, supported=SUPPORTED)


def test_the_dialog_takes_a_model_s_page_copied_from_the_browser(qtbot, cache, monkeypatch):
    import workbench.ui.hub_dialog as dialog_module
    from PySide6.QtWidgets import QApplication

    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.presets.machine import Machine
    from workbench.ui.hub_dialog import GetModelDialog

    monkeypatch.setattr(dialog_module, "supported_architectures", lambda: SUPPORTED)
    dialog = GetModelDialog(AppModel(demo_engine_config()), lambda name: None)
    dialog.machine = Machine("cpu", 0, 0, 0, 32 << 30)
    qtbot.addWidget(dialog)
    dialog.repo.setText(f"https://huggingface.co/{DEMO}/tree/main")
    dialog.size_up()
    assert (dialog.repo.text(), dialog.revision.text()) == (DEMO, "main"), "the page's id and revision, in their fields"
    qtbot.waitUntil(lambda: dialog.download_button.isEnabled(), timeout=30_000)
    assert dialog.remote.repo_id == DEMO
    qtbot.waitUntil(lambda: not dialog.workers, timeout=30_000)

    # the model card's "Use this model > vLLM" box, pasted whole: its vllm serve line names the model
    QApplication.clipboard().setText(f'# Install vLLM from pip:\npip install vllm\n# Load and run the model:\n'
                                     f'vllm serve "{TINY}"\n# Call the server using curl:\ncurl -X POST '
                                     f'"http://localhost:8000/v1/chat/completions"\n')
    dialog.repo.clear()
    dialog.revision.clear()
    dialog.repo.paste()
    dialog.size_up()
    assert (dialog.repo.text(), dialog.revision.text()) == (TINY, "")
    qtbot.waitUntil(lambda: not dialog.workers, timeout=30_000)
    assert dialog.remote.repo_id == TINY
