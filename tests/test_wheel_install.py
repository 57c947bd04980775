"""The package as a user gets it: a wheel installed into a fresh virtualenv, started from outside
the source tree on an empty data folder, builds the demo model from the corpus it ships and brings
the engine up."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import psutil
import pytest

from workbench.engine.vllm_plugin.process_life import OWNER_ENV

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["workbench/py.typed"] + [f"workbench/resources/presets/{name}.toml" for name in (
    "balanced", "low-latency", "high-throughput", "long-context", "memory-limited")] + [f"workbench/resources/demo_corpus/{name}"
                                    for name in ("PROVENANCE.md", "dialogues.txt", "system_prompts.txt")]

pytestmark = pytest.mark.slow  # builds the demo model for real (a minute or two), once

# The caller's PYTHONPATH would put another workbench (or its metadata) before the installed one.
CLEAN_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def build_wheel(tmp_path: Path) -> Path:
    """Builds from a copy of the sources, so that nothing left in the work tree (build/) gets in."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "workbench", source / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path / "dist")], env=CLEAN_ENV, check=True, capture_output=True, timeout=300)
    return next((tmp_path / "dist").glob("vllm_workbench-*.whl"))


def fresh_venv_with(wheel: Path, venv: Path) -> Path:
    """A new virtualenv holding the wheel alone; its dependencies are read from this test's venv
    through a .pth file, rather than installed again (gigabytes)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=CLEAN_ENV, check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   env=CLEAN_ENV, check=True, capture_output=True, timeout=300)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             env=CLEAN_ENV, check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "dependencies-from-the-test-venv.pth").write_text("\n".join(dependency_dirs()) + "\n")
    return python


def dependency_dirs() -> list[str]:
    """Where this test's interpreter finds the dependencies: its site-packages, and the folders on
    PYTHONPATH (the GPU machine's kit puts vLLM and Qt there) other than the source tree's."""
    extra = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if entry and Path(entry).is_dir() and not Path(entry).resolve().is_relative_to(ROOT)]
    return [sysconfig.get_paths()["purelib"], *extra]


def processes_started_by(pid: int) -> list[int]:
    """vLLM's processes carry the owner tag of the app that started them, whatever their parent now."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(OWNER_ENV, "").startswith(f"{pid}:"):
                found.append(process.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_wheel_install_builds_the_demo_model_and_starts_the_engine(tmp_path):
    wheel = build_wheel(tmp_path)
    assert set(SHIPPED) <= set(zipfile.ZipFile(wheel).namelist())
    venv = tmp_path / "venv"
    python = fresh_venv_with(wheel, venv)
    elsewhere, data = tmp_path / "elsewhere", tmp_path / "data"
    elsewhere.mkdir()
    data.mkdir()
    env = dict(CLEAN_ENV, QT_QPA_PLATFORM="offscreen", WORKBENCH_DATA_DIR=str(data))
    found = subprocess.run([str(python), "-c", "import workbench; print(workbench.__file__)"], cwd=elsewhere, env=env,
                           capture_output=True, text=True)
    assert Path(found.stdout.strip()).is_relative_to(venv), f"the installed package should be used: {found}"

    app = subprocess.Popen([str(venv / "bin" / "vllm-workbench"), "--quit-when-ready"], cwd=elsewhere, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = app.communicate(timeout=900)
    finally:
        app.kill()
    assert app.returncode == 0, stderr[-4000:]
    assert f"Engine ready: {data / 'models' / 'demo-qwen2'}" in stderr, stderr[-4000:]
    assert (data / "models" / "demo-qwen2" / "workbench-demo.json").exists(), "the demo model was not built"
    deadline = time.monotonic() + 30
    while processes_started_by(app.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_started_by(app.pid), "vLLM processes outlived the app"
