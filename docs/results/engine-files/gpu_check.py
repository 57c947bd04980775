"""Device check (run from the project root on the GPU machine): an engine start on CUDA vLLM puts its socket files in the run folder, and the
folder goes with the engine; a long temp folder falls back to vLLM's own placement."""
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":
    from workbench.engine.demo_model import ensure_demo_model
    from workbench.engine.session import EngineSession
    from workbench.engine.spec import EngineConfig
    import vllm

    print("vllm", vllm.__version__, flush=True)
    model = str(ensure_demo_model())
    tmp = Path(tempfile.gettempdir())
    before = {p for p in tmp.iterdir() if p.is_socket()}
    session = EngineSession(EngineConfig(model=model, enforce_eager=True, gpu_memory_utilization=0.2))
    started = time.monotonic()
    session.start(lambda progress: None)
    print(f"engine ready in {time.monotonic() - started:.1f} s on {session.engine_pids}", flush=True)
    folder = session.run_folder
    print("run folder:", folder, sorted(p.name for p in folder.iterdir()), flush=True)
    print("sockets made in the run folder:", sum(p.is_socket() for p in folder.iterdir()), flush=True)
    print("new sockets in the temp folder itself:", len({p for p in tmp.iterdir() if p.is_socket()} - before), flush=True)
    session.shutdown()
    print("after shutdown, the run folder exists:", folder.exists(), flush=True)
    print("new sockets left in the temp folder:", len({p for p in tmp.iterdir() if p.is_socket()} - before), flush=True)
    sys.exit(0)
