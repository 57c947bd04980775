"""The user's own files (models trusted to run their code, servers connected to) are replaced whole or
not at all: a write that fails half-way, as on a full disk, leaves the file as it was."""
from __future__ import annotations

import resource
import signal
from contextlib import contextmanager

import pytest

from workbench.remote.spec import ServerSpec


@pytest.fixture
def config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path))
    return tmp_path


@contextmanager
def disk_full_after(num_bytes: int):
    """Writes past ``num_bytes`` of any file fail (EFBIG), as a full disk's do, in this process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    was = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error from write(), not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (num_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, was)


def test_a_trust_that_fails_half_way_keeps_the_models_trusted_before(config_folder):
    from workbench.presets.trust import remember_trust, trusted_models

    remember_trust("org/model-a")
    remember_trust("org/model-b")
    with disk_full_after(16), pytest.raises(OSError):
        remember_trust("org/model-c")
    assert trusted_models() == ["org/model-a", "org/model-b"]
    assert [p.name for p in config_folder.iterdir()] == ["trusted_models.json"], "a partial file was left"


def test_a_recent_server_that_fails_half_way_keeps_the_list_before(config_folder):
    from workbench.remote.recent import recent_servers, remember

    remember(ServerSpec("http://127.0.0.1:8000"))
    remember(ServerSpec("https://gpu-box.example:8000"))
    with disk_full_after(16), pytest.raises(OSError):
        remember(ServerSpec("http://127.0.0.1:8001"))
    assert [s.api_root for s in recent_servers()] == ["https://gpu-box.example:8000", "http://127.0.0.1:8000"]
    assert [p.name for p in config_folder.iterdir()] == ["recent_servers.json"], "a partial file was left"


def test_a_preset_saved_or_exported_is_replaced_whole_with_the_usual_permissions(config_folder, tmp_path):
    import os
    import stat

    from workbench.presets import store

    target = tmp_path / "shared.toml"
    document = store.load_catalog().entries["balanced"].document
    store.export_preset(document, target)
    before = target.read_text()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask  # as a plain write gives it, to share
    with disk_full_after(len(before) // 2), pytest.raises(OSError):
        store.export_preset(document, target)
    assert target.read_text() == before and [p.name for p in tmp_path.glob(".shared.toml.*")] == []
