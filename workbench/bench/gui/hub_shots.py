"""Offscreen pictures of Model > Get a model… for the docs, against the tests' Hub on loopback (olah, with
the stand-in in front: tests/hub_server.py), on this machine as it is:

    python -m workbench.bench.gui.hub_shots docs

writes ``hub-search.png`` (a search for Qwen2.5: the listing with parameters, dtype, size, licence, access
and whether vLLM runs it), ``hub-fits.png`` (the demo model sized up: it fits, with its KV cache),
``hub-does-not-fit.png`` (a config-only repo of Qwen2.5-72B-Instruct's shape: it does not fit here, and
what would make it fit) and ``hub-download.png`` (the demo model downloading: bytes, rate, time left).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
QWEN72B = {"hidden_size": 8192, "intermediate_size": 29568, "num_attention_heads": 64, "num_hidden_layers": 80,
           "num_key_value_heads": 8, "vocab_size": 152064, "tie_word_embeddings": False}  # as published
TIMEOUT_S = 120.0


def _repos(server, work: Path) -> None:
    from hub_repos import QWEN25_05B_CONFIG, QWEN25_7B_CONFIG, qwen7b_shaped_files
    from hub_server import add_repo

    from workbench.engine.demo_model import ensure_demo_model

    shapes = {"Qwen/Qwen2.5-0.5B-Instruct": (QWEN25_05B_CONFIG, "apache-2.0"),
              "Qwen/Qwen2.5-7B-Instruct": (QWEN25_7B_CONFIG, "apache-2.0"),
              "Qwen/Qwen2.5-72B-Instruct": ({**QWEN25_7B_CONFIG, **QWEN72B}, "qwen")}  # the licences published
    for repo, (config, licence) in shapes.items():
        folder = qwen7b_shaped_files(work / repo.replace("/", "-"), config=config, shards=8)
        (folder / "README.md").write_text(f"---\nlicense: {licence}\n---\n# {repo} (config and headers only)\n")
        add_repo(server, repo, folder)
    demo = work / "demo"
    shutil.copytree(ensure_demo_model(), demo)
    (demo / "README.md").write_text("---\nlicense: apache-2.0\n---\n# The workbench's demo model\n")
    add_repo(server, "workbench/Qwen2.5-demo", demo)
    server.pace["workbench/Qwen2.5-demo/model.safetensors"] = 0.02


def main(folder: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT / "tests"))
    import pytest
    from hub_server import HubServer, point_client_at

    from workbench.app import demo_engine_config
    from workbench.bench.gui.screenshot import process_events_until, save_small
    from workbench.bench.gui.window_driver import application
    from workbench.model.app_model import AppModel
    from workbench.ui.hub_dialog import GetModelDialog

    docs, work = Path(folder), Path(tempfile.mkdtemp(prefix="hub-shots-"))
    application()
    patch = pytest.MonkeyPatch()
    with HubServer(work) as server:
        _repos(server, work)
        server.start()
        point_client_at(patch, server.endpoint, work / "hf-home")
        patch.setenv("WORKBENCH_DATA_DIR", str(work / "data"))
        dialog = GetModelDialog(AppModel(demo_engine_config()), lambda name: None)
        dialog.resize(1180, 800)
        dialog.show()
        dialog.query.setText("Qwen2.5")
        dialog.search()
        process_events_until(lambda: dialog.results.rowCount() > 0, TIMEOUT_S)
        save_small(dialog, str(docs / "hub-search.png"))
        for repo, name in (("workbench/Qwen2.5-demo", "hub-fits.png"), ("Qwen/Qwen2.5-72B-Instruct", "hub-does-not-fit.png")):
            dialog.repo.setText(repo)
            dialog.size_up()
            process_events_until(lambda: dialog.remote is not None and dialog.remote.repo_id == repo, TIMEOUT_S)
            process_events_until(lambda: False, 0.3)
            save_small(dialog, str(docs / name))
            print("saved", name, "|", dialog.detail.toPlainText().splitlines()[1][:160])
        dialog.repo.setText("workbench/Qwen2.5-demo")
        dialog.size_up()
        process_events_until(lambda: dialog.download_button.isEnabled() and dialog.remote.repo_id == dialog.repo.text(),
                             TIMEOUT_S)
        dialog.download()
        process_events_until(lambda: dialog.progress.value() > 300, TIMEOUT_S)
        save_small(dialog, str(docs / "hub-download.png"))
        print("saved hub-download.png |", dialog.status.text())
        dialog.cancel()
        process_events_until(lambda: not dialog.cancel_button.isEnabled(), TIMEOUT_S)
        dialog.close()
    patch.undo()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
