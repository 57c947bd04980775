"""The real ``huggingface_hub`` client against the tests' Hub on 127.0.0.1 (olah, with the stand-in in front
for what olah does not serve offline: tests/hub_server.py): what the Hub feature asks of the Hub works there
as it does on huggingface.co. No engine, no network beyond loopback."""
from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest
from hub_server import (QWEN25_7B_PARAMETERS, HubServer, add_repo, hub_fixture, point_client_at,
                        qwen7b_shaped_files, tiny_repo_files)

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parent.parent
TINY = "tiny-org/tiny-model"
QWEN = "Qwen/Qwen2.5-7B-Instruct"
GATED = "gated-org/gated-model"
TOKEN = "hf_testtoken0123456789"


def build_repos(server, work):
    """A tiny repo, the 7B-shaped config-only repo and a gated repo."""
    add_repo(server, TINY, tiny_repo_files(work / "src-tiny"))
    add_repo(server, QWEN, qwen7b_shaped_files(work / "src-qwen"))
    add_repo(server, GATED, tiny_repo_files(work / "src-gated", weights_kib=4), gated_token=TOKEN)


hub = hub_fixture(build_repos)


@pytest.fixture
def client(hub, tmp_path, monkeypatch):
    """An HfApi on the module's Hub, with an empty cache of its own; the cache folder is ``client.cache``."""
    from huggingface_hub import HfApi

    cache = point_client_at(monkeypatch, hub.endpoint, tmp_path / "hf-home")
    api = HfApi()
    api.cache = cache
    return api


def test_model_info_has_what_the_hub_says(client, hub):
    info = client.model_info(TINY)
    assert info.id == TINY and len(info.sha) == 40
    assert {s.rfilename for s in info.siblings} == {"config.json", "tokenizer.json", "tokenizer_config.json",
                                                    "model.safetensors"}
    siblings = {s.rfilename: s for s in client.model_info(TINY, files_metadata=True).siblings}
    weights = (hub.repos_root / TINY / "model.safetensors").read_bytes()
    assert siblings["model.safetensors"].size == len(weights) and siblings["config.json"].lfs is None
    assert siblings["model.safetensors"].lfs.sha256 == hashlib.sha256(weights).hexdigest()
    tree = {f.path: f for f in client.list_repo_tree(TINY)}  # olah's own listing: the LFS pointer read
    assert tree["model.safetensors"].size == len(weights)
    assert tree["model.safetensors"].lfs.sha256 == hashlib.sha256(weights).hexdigest()
    assert client.model_info(TINY, revision=info.sha).sha == info.sha
    expanded = client.model_info(QWEN, expand=["safetensors", "gated"])
    assert expanded.safetensors.total == QWEN25_7B_PARAMETERS and expanded.safetensors.parameters == {
        "BF16": QWEN25_7B_PARAMETERS}
    assert expanded.gated is False
    listed = sum(s.size for s in client.model_info(QWEN, files_metadata=True).siblings)
    assert 2 * QWEN25_7B_PARAMETERS < listed < 2 * QWEN25_7B_PARAMETERS + 1e6  # BF16 weights, as the Hub lists them
    assert sorted(client.list_repo_files(QWEN))[:2] == ["config.json", "model-00001-of-00004.safetensors"]


def test_search_finds_repos_by_name(client):
    assert [m.id for m in client.list_models(search="qwen2.5")] == [QWEN]
    assert {m.id for m in client.list_models(search="model")} == {TINY, GATED}
    assert [m.id for m in client.list_models(search="no-such-model")] == []
    assert [m.id for m in client.list_models(author="tiny-org")] == [TINY]


def test_download_into_the_standard_cache(client, hub):
    from huggingface_hub import hf_hub_download, scan_cache_dir

    path = hf_hub_download(TINY, "config.json")
    assert path.startswith(str(client.cache / "models--tiny-org--tiny-model" / "snapshots"))
    assert open(path).read() == (hub.repos_root / TINY / "config.json").read_text()
    assert client.model_info(TINY).sha in path
    assert [r.repo_id for r in scan_cache_dir().repos] == [TINY]
    weights = hf_hub_download(TINY, "model.safetensors")  # an LFS file: its blob is named by its sha256
    with open(weights, "rb") as f:
        assert Path(weights).resolve().name == hashlib.sha256(f.read()).hexdigest()


def test_snapshot_download_takes_only_the_patterns_asked_for(client, tmp_path):
    from huggingface_hub import snapshot_download

    folder = snapshot_download(TINY, allow_patterns=["*.json"])
    assert sorted(p.name for p in Path(folder).iterdir()) == [
        "config.json", "tokenizer.json", "tokenizer_config.json"]


def test_safetensors_headers_size_up_a_7b_model_without_its_weights(client, hub):
    from huggingface_hub import get_safetensors_metadata

    before = len(hub.requests())
    meta = get_safetensors_metadata(QWEN)
    assert meta.sharded and len(meta.files_metadata) == 4
    total = sum(meta.parameter_count.values())
    assert total == QWEN25_7B_PARAMETERS and 7.5e9 < total < 7.7e9
    asked = hub.requests()[before:]
    ranged = [line for line in asked if line.split()[1].endswith(".safetensors") and line.startswith("GET")]
    assert len(ranged) == 4 and all(line.endswith("bytes=0-100000") for line in ranged), asked
    assert get_safetensors_metadata(TINY).parameter_count == {"F32": 16384}


def test_gated_repo_needs_its_token(client, monkeypatch):
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import GatedRepoError

    from huggingface_hub import get_safetensors_metadata

    assert client.model_info(GATED).gated == "manual"  # its card is public, as on the Hub
    with pytest.raises(GatedRepoError):
        get_safetensors_metadata(GATED)  # sizing it up needs the token too
    with pytest.raises(GatedRepoError) as refused:
        hf_hub_download(GATED, "config.json")
    assert refused.value.response.status_code == 401
    with pytest.raises(GatedRepoError) as wrong:
        hf_hub_download(GATED, "config.json", token="hf_someoneelse")
    assert wrong.value.response.status_code == 403
    assert open(hf_hub_download(GATED, "config.json", token=TOKEN)).read().startswith("{")
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # the token as the app's users give it
    assert hf_hub_download(GATED, "model.safetensors")
    assert get_safetensors_metadata(GATED).parameter_count == {"F32": 1024}
    client.auth_check(GATED)


def test_installer_puts_the_hub_server_in_a_virtualenv_of_its_own(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("install_script", ROOT / "packaging" / "install.py")
    install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install)
    install.ensure_hub_server(install.Runner(dry_run=True), venv=tmp_path / "hub-venv")
    said = capsys.readouterr().out
    assert f"-m venv {tmp_path / 'hub-venv'}" in said and "pip install --no-cache-dir olah==0.5.4" in said
    assert install.HUB_VENV == ROOT / ".venv-hub"


def test_download_resumes_after_the_server_is_killed_mid_transfer(tmp_path, monkeypatch):
    """huggingface_hub 2.x resumes within one call: on a lost connection it retries (5 times, 1 s apart)
    with a Range from the bytes it has written, which it writes DOWNLOAD_CHUNK_SIZE (10 MiB) at a time.
    A call that gives up deletes its partial file, so the server is back before the retries run out."""
    from huggingface_hub import constants, hf_hub_download

    repo, name = "slow-org/slow-model", "model.safetensors"
    size_kib = constants.DOWNLOAD_CHUNK_SIZE // 1024 + 6 * 1024  # 16 MiB, sent in about 1.3 s
    with HubServer(tmp_path / "hub", pace={f"{repo}/{name}": 0.005}) as hub:
        source = tiny_repo_files(tmp_path / "src", weights_kib=size_kib) / name
        add_repo(hub, repo, source.parent)
        hub.start()
        cache = point_client_at(monkeypatch, hub.endpoint, tmp_path / "hf-home")
        result: dict = {}

        def download():
            try:
                result["path"] = hf_hub_download(repo, name)
            except BaseException as error:
                result["error"] = error

        thread = threading.Thread(target=download)
        thread.start()
        kept = _wait_for_partial(cache, at_least=constants.DOWNLOAD_CHUNK_SIZE)
        hub.kill()
        assert "path" not in result and kept < source.stat().st_size
        hub.start()  # the same ports, within the client's retries
        thread.join(timeout=30)
        assert not thread.is_alive() and "error" not in result, result
        with open(result["path"], "rb") as got:
            assert hashlib.sha256(got.read()).digest() == hashlib.sha256(source.read_bytes()).digest()
        gets = [line for line in hub.requests() if line.startswith("GET") and line.split()[1].endswith(name)]
        resumed_at = int(gets[-1].rsplit("bytes=", 1)[1].rstrip("-")) if "bytes=" in gets[-1] else 0
        assert gets[0].endswith(" -") and len(gets) == 2, gets  # the whole file asked for, then the rest
        assert resumed_at % constants.DOWNLOAD_CHUNK_SIZE == 0 and 0 < resumed_at < source.stat().st_size, gets


def _wait_for_partial(cache, at_least: int, timeout_s: float = 10.0) -> int:
    """The size of the download's partial file once it holds ``at_least`` bytes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for partial in cache.glob("models--*/blobs/*.incomplete"):
            try:
                size = partial.stat().st_size
            except FileNotFoundError:
                continue
            if size >= at_least:
                return size
        time.sleep(0.005)
    raise AssertionError(f"no download of {at_least} bytes under way in {cache}")
