import cProfile, pstats, sys, threading
import workbench.bench.gui.app_path as ap

prof = cProfile.Profile()
orig = ap.run_until
def wrapped(*a, **k):
    prof.enable()
    try:
        return orig(*a, **k)
    finally:
        prof.disable()
ap.run_until = wrapped

# the engine worker thread: profile its run loop too
import workbench.engine.loop as lp
wprof = cProfile.Profile()
orig_run = lp.EngineLoop.run_until if hasattr(lp.EngineLoop, "run_until") else None

if __name__ == "__main__":
    from workbench.bench.cli import main
    rc = main(sys.argv[1:])
    s = pstats.Stats(prof); s.sort_stats("cumulative"); s.print_stats(45)
    s.sort_stats("tottime"); s.print_stats(35)
    sys.exit(rc)
