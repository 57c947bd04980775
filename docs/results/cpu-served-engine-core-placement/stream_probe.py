import sys, time, tempfile, os, subprocess, threading, statistics
HERE = os.path.dirname(os.path.abspath(__file__)); ROOT = os.path.join(HERE, "..", "..", "..")
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]
from remote_server import served_demo_options
from workbench.remote.serve import ServerProcess
import httpx
model = "/root/.local/share/vllm-workbench/models/demo-qwen2"
server = ServerProcess(served_demo_options(model), tempfile.mkdtemp())
server.start(); server.wait_ready(timeout_s=300)
print("placed", server.engine_core_cores, flush=True)
def one(results, max_tokens=1850):
    body = {"model": model, "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Tell me about blocks."}]}
    t0 = time.monotonic(); first = None; gaps = []; last = None
    with httpx.stream("POST", server.base_url + "/v1/chat/completions", json=body, timeout=300, trust_env=False) as r:
        for chunk in r.iter_raw():
            now = time.monotonic()
            first = first or now - t0
            if last is not None: gaps.append(now - last)
            last = now
    results.append((first, time.monotonic() - t0, max(gaps)))
for label, nspin, conc in (("quiet x1", 0, 1), ("quiet x16", 0, 16), ("spinner x1", 1, 1)):
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(nspin)]
    for rep in range(3):
        res = []
        ths = [threading.Thread(target=one, args=(res, 1850 if conc == 1 else 512)) for _ in range(conc)]
        t0 = time.monotonic()
        for t in ths: t.start()
        for t in ths: t.join()
        wall = time.monotonic() - t0
        print(label, "wall %.2f first(max) %.2f longest gap %.2f" % (wall, max(r[0] for r in res), max(r[2] for r in res)), flush=True)
    for s in spin: s.kill()
server.stop()
