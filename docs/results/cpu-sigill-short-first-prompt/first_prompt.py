import os, sys
from vllm import EngineArgs, SamplingParams
from vllm.v1.engine.llm_engine import LLMEngine

def main():
    model = sys.argv[1]
    args = EngineArgs(model=model, max_model_len=2048, max_num_seqs=64, num_gpu_blocks_override=1024,
                      scheduling_policy="priority", enforce_eager=True, block_size=32)
    engine = LLMEngine.from_engine_args(args)
    params = SamplingParams(temperature=0.0, max_tokens=8, ignore_eos=True)
    num, length = int(sys.argv[2]), int(sys.argv[3])
    if len(sys.argv) > 4:  # a warm-up request first
        engine.add_request("warm", {"prompt_token_ids": [21] * int(sys.argv[4])}, params)
        while engine.has_unfinished_requests():
            engine.step()
        print("WARMED", flush=True)
    for i in range(num):
        engine.add_request(f"r{i}", {"prompt_token_ids": [20 + i] + [21] * (length - 1)}, params)
    steps = 0
    while engine.has_unfinished_requests():
        engine.step(); steps += 1
    print("FINISHED", steps, "steps", flush=True)
    engine.engine_core.shutdown()

if __name__ == "__main__":
    main()
