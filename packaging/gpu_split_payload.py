"""Splits the GPU kit's two parts (``.gpu/a`` and ``.gpu/b`` from ``../shared/gpu/make-payload``) into
``.gpu/p1``, ``.gpu/p2``, ``.gpu/p3``, each small enough to travel beside the work tree in one device call
(64 MiB in all), and prints the three calls. Part a's ``C.so.xz`` goes in two halves (p1, p2), part b's
``vllm_rest.tar.xz`` and ``install.sh`` in p1, its wheels wherever they fit. The third call rebuilds
``.gpu/b`` on the machine from what the three left in ``~/wb-b`` and sources its ``install.sh``.

    python3 packaging/gpu_split_payload.py        (from the project root, after make-payload)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CALL_LIMIT = 64 * 2**20
MARGIN = 4 * 2**20  # what the listing of the tree leaves out (directories, metadata)


def tree_bytes(root: Path) -> int:
    """Bytes of what a device call carries besides the payload: tracked and untracked, not ignored."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                           capture_output=True, check=True).stdout.split(b"\0")
    return sum((root / name.decode()).stat().st_size for name in names if name and (root / name.decode()).is_file())


def split(root: Path) -> None:
    gpu = root / ".gpu"
    missing = [str(path.relative_to(root)) for path in (gpu / "a" / "C.so.xz", gpu / "b" / "install.sh")
               if not path.is_file()]
    if missing:
        sys.exit(f"{', '.join(missing)} missing: build the kit's payload first (../shared/gpu/make-payload, from the "
                 "project root), then run this again")
    room = CALL_LIMIT - MARGIN - tree_bytes(root)
    so = (gpu / "a" / "C.so.xz").read_bytes()
    half = (len(so) + 1) // 2
    for name in ("p1", "p2", "p3"):
        shutil.rmtree(gpu / name, ignore_errors=True)
        (gpu / name / "deps").mkdir(parents=True)
    (gpu / "p1" / "a1").write_bytes(so[:half])
    (gpu / "p2" / "a2").write_bytes(so[half:])
    for name in ("vllm_rest.tar.xz", "install.sh"):
        shutil.copy2(gpu / "b" / name, gpu / "p1" / name)
    used = {name: sum(f.stat().st_size for f in (gpu / name).rglob("*") if f.is_file()) for name in ("p1", "p2", "p3")}
    for wheel in sorted((gpu / "b" / "deps").glob("*.whl"), key=lambda w: -w.stat().st_size):
        size = wheel.stat().st_size
        target = next((name for name in ("p1", "p2", "p3") if used[name] + size <= room), None)
        if target is None:
            sys.exit(f"no call has room for {wheel.name} ({size} bytes): the tree leaves {room} bytes a call")
        shutil.copy2(wheel, gpu / target / "deps" / wheel.name)
        used[target] += size
    for name, size in used.items():
        print(f".gpu/{name}: {size / 2**20:.1f} MiB (room {room / 2**20:.1f} MiB beside the tree)")
    print("""
call 1, carry [".gpu/p1"]:
  mkdir -p ~/wb-stage ~/wb-b/deps && cp .gpu/p1/a1 ~/wb-stage/ && cp .gpu/p1/vllm_rest.tar.xz .gpu/p1/install.sh ~/wb-b/ && cp .gpu/p1/deps/* ~/wb-b/deps/
call 2, carry [".gpu/p2"], within 30 s:
  cat ~/wb-stage/a1 .gpu/p2/a2 > ~/wb-stage/C.so.xz && rm ~/wb-stage/a1 && cp .gpu/p2/deps/* ~/wb-b/deps/
call 3, carry [".gpu/p3"], within 30 s:
  cp .gpu/p3/deps/* ~/wb-b/deps/ && rm -rf .gpu/b && mkdir -p .gpu && cp -r ~/wb-b .gpu/b && source .gpu/b/install.sh && ...
later calls (no carry): source ~/wb-site/workbench-env.sh && ...""")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(__doc__)
    split(Path.cwd())
