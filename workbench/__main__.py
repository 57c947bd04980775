"""``python -m workbench`` / ``vllm-workbench``: the app; ``vllm-workbench bench ...``: benchmarks."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "bench":
        from workbench.bench.cli import main as bench_main

        return bench_main(argv[1:])
    from workbench.app import run_gui

    return run_gui(argv)


if __name__ == "__main__":  # the engine-core process is spawned: keep the entry point guarded
    sys.exit(main())
