"""The start command's check of Qt's xcb plugin: the system libraries it lacks found with the real ldd
on PySide6's real libqxcb.so, mapped to Debian packages, installed as root with apt-get or named with
the exact ``sudo apt-get install`` line."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# ldd's output for PySide6's libqxcb.so on a fresh Debian 12 (bookworm), the machine these tests were written on
DEBIAN_12_LDD = Path(__file__).parent / "data" / "ldd-libqxcb-debian12.txt"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("ldd") is None,
                                reason="the xcb check is for Linux, with ldd")


def install_script():
    spec = importlib.util.spec_from_file_location("install_script", ROOT / "packaging/install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def linker_cache() -> set[str]:
    """The sonames the dynamic linker's cache holds (``ldconfig -p``), asked apart from ldd."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    output = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in output.splitlines()[1:] if line.strip()}


def test_the_real_plugin_lacks_what_the_linker_cannot_find_and_each_has_a_package():
    install = install_script()
    plugin = install.xcb_plugin(ROOT / ".venv")
    assert plugin is not None and plugin.name == "libqxcb.so"
    missing = install.ldd_missing(plugin)
    output = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    needed = {line.split()[0] for line in output.splitlines() if " => " in line}
    system = needed & set(install.XCB_PACKAGES)
    assert {"libxcb.so.1", "libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0"} <= system
    cached = linker_cache()
    assert set(missing) == {name for name in system if name not in cached}  # what this machine lacks, if anything
    assert set(missing) <= set(install.XCB_PACKAGES)  # every one of them has its package


def test_debian_12_needs_icccm_and_keysyms_with_the_sudo_line_or_installs_them_as_root():
    install = install_script()
    missing = install.missing_libraries(DEBIAN_12_LDD.read_text())
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]  # each once, though ldd names them twice
    command, said = install.xcb_advice(missing, as_root=False, has_apt=True)
    assert command is None and said.endswith("\n    sudo apt-get install -y libxcb-icccm4 libxcb-keysyms1")
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1 are missing" in said
    command, said = install.xcb_advice(missing, as_root=True, has_apt=True)
    assert command == ["apt-get", "install", "-y", "libxcb-icccm4", "libxcb-keysyms1"] and "Installing" in said
    command, said = install.xcb_advice(missing, as_root=True, has_apt=False)  # no apt: the packages named
    assert command is None and "libxcb-icccm4 libxcb-keysyms1" in said and "sudo" not in said


def test_a_qt_library_missing_from_a_damaged_venv_asks_for_a_reinstall(tmp_path):
    """A copy of the plugin whose Qt library beside it is gone: the real ldd names it, no package is
    guessed, and the advice is to reinstall."""
    install = install_script()
    plugin = install.xcb_plugin(ROOT / ".venv")
    copy = tmp_path / "plugins" / "platforms" / plugin.name
    copy.parent.mkdir(parents=True)
    shutil.copy(plugin, copy)  # its RUNPATH, $ORIGIN/../../lib, now holds nothing
    missing = install.ldd_missing(copy, env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    assert "libQt6XcbQpa.so.6" in missing
    command, said = install.xcb_advice(missing, as_root=True, has_apt=True)
    assert command is None and "--reinstall" in said and "libQt6XcbQpa.so.6" in said


def start_dry_run(**env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return subprocess.run([sys.executable, str(ROOT / "packaging/install.py"), "--start", "--dry-run"],
                          capture_output=True, text=True, env={**environ, "WORKBENCH_FORCE_CPU": "1", **env})


def test_the_start_command_checks_before_it_opens_a_window():
    install = install_script()
    missing = install.ldd_missing(install.xcb_plugin(ROOT / ".venv"))
    packages = sorted({install.XCB_PACKAGES[name] for name in missing})
    result = start_dry_run(DISPLAY=":0")
    start = result.stdout.rindex("-m workbench") if "-m workbench" in result.stdout else len(result.stdout)
    if not missing:
        assert result.returncode == 0 and "xcb platform plugin" not in result.stdout
    elif os.geteuid() == 0 and shutil.which("apt-get"):  # installed, then started
        assert result.returncode == 0
        assert result.stdout.index("+ apt-get install -y " + " ".join(packages)) < start
    else:  # stopped, with the line to run
        assert result.returncode == 1 and "sudo apt-get install -y " + " ".join(packages) in result.stdout
        assert "-m workbench" not in result.stdout
    for quiet in ({}, {"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}):  # no display, or no xcb: no check
        result = start_dry_run(**quiet)
        assert result.returncode == 0 and "xcb platform plugin" not in result.stdout and "-m workbench" in result.stdout
