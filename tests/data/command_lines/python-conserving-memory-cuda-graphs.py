# vllm-project/vllm 009eec3b2b00e1b8afb4bcafb58e9403b2aa1ada docs/configuration/conserving_memory.md, "Reduce CUDA Graphs", indented as the page's "??? code" block (Apache-2.0)
    from vllm import LLM
    from vllm.config import CompilationConfig, CompilationMode

    llm = LLM(
        model="meta-llama/Llama-3.1-8B-Instruct",
        compilation_config=CompilationConfig(
            level=CompilationMode.VLLM_COMPILE,
            # By default, it goes up to max_num_seqs
            cudagraph_capture_sizes=[1, 2, 4, 8, 16],
        ),
    )
