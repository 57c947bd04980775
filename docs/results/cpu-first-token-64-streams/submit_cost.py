"""Per-request submit cost: vLLM's add_request with one shared SamplingParams (as (a)) against the
session's submit (as (b)/(d)), 64 requests at a time, the engine left to finish between rounds."""
import cProfile, pstats, sys, time


class Sink:
    def __getattr__(self, name):
        return lambda *a, **k: None


def main():
    from workbench.bench.engine_bench import start_session, random_prompts
    from workbench.engine.backend import ChatRequest
    from workbench.engine.sampling import SamplingSettings
    from workbench.engine.sampling_params import to_sampling_params
    from workbench.engine.spec import EngineConfig

    session = start_session(EngineConfig(model=sys.argv[1], max_model_len=2048, max_num_seqs=64))
    session.connect(Sink())
    sampling = SamplingSettings(temperature=0.0, max_tokens=4, ignore_eos=True)
    engine = session.engine

    def drain():
        while engine.has_unfinished_requests():
            session.advance()

    def plain(prompts, tag):
        params = to_sampling_params(sampling, 1000, True)
        t = time.perf_counter()
        for i, p in enumerate(prompts):
            engine.add_request(f"{tag}-{i}", {"prompt_token_ids": p}, params)
        return time.perf_counter() - t

    def ours(prompts, tag):
        t = time.perf_counter()
        for i, p in enumerate(prompts):
            session.submit(ChatRequest(f"{tag}-{i}", (), sampling, prompt_token_ids=tuple(p)))
        return time.perf_counter() - t

    for rnd in range(6):
        for name, fn in (("plain", plain), ("session", ours)):
            prompts = random_prompts(64, 128, 1000, seed=rnd)
            dt = fn(prompts, f"{name}{rnd}")
            drain()
            print(f"{name}: {dt * 1e6 / 64:.0f} µs a request", flush=True)
    for name, fn in (("plain", plain), ("session", ours)):
        prof = cProfile.Profile()
        prompts = random_prompts(64, 128, 1000, seed=77)
        prof.enable(); fn(prompts, "prof" + name); prof.disable(); drain()
        print("PROFILE", name)
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    session.shutdown()


if __name__ == "__main__":
    main()
