"""The layers hold: import-linter's contracts (pyproject.toml, [tool.importlinter]) over the whole
import graph, and the engine layer really importing and running with Qt absent, as on the GPU machine."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QT_PACKAGES = ("PySide6", "shiboken6", "pyqtgraph", "superqt")


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_import_contracts_are_kept():
    # import-linter's own command, through this Python: wherever the package is importable, with or
    # without its console script (the GPU machine carries it as a wheel on PYTHONPATH).
    lint_imports = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    run = subprocess.run([sys.executable, "-c", lint_imports, "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in run.stdout, run.stdout[-3000:]


def test_layers_are_enforced_as_drawn():
    """One layers contract over the whole package, every module of it in a layer (kept: the test above), and
    docs/architecture.md drawing the same order."""
    [layers] = [c for c in _contracts() if c["type"] == "layers"]
    assert layers["containers"] == ["workbench"] and layers["exhaustive"] is True
    drawn = " > ".join(layers["layers"])
    assert drawn in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), drawn


QT_ABSENT = f"""
import importlib, pkgutil, sys
for name in {QT_PACKAGES!r}:
    sys.modules[name] = None  # any import of them now fails, as where they are not installed
import workbench.engine, workbench.telemetry, workbench.model, workbench.batch, workbench.storage
for package in (workbench.engine, workbench.telemetry, workbench.model, workbench.batch, workbench.storage):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
from workbench.__main__ import main
sys.exit(main(["bench", "--help"]))
"""


def test_engine_layer_runs_with_qt_absent():
    """Every module of the engine layer, telemetry, the application model, batch runs and storage imports with Qt
    absent, and the headless entry point (``vllm-workbench bench``) starts."""
    run = subprocess.run([sys.executable, "-c", QT_ABSENT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "compare" in run.stdout, run.stdout[-2000:]
