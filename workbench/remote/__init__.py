"""A vLLM server as the workbench's engine: attach to one, or serve a preset as one. No Qt, no vLLM.

``spec`` says where the server is (and, for "Serve", what to start); ``openai_client`` streams chat and
completions through its OpenAI-compatible API; ``prometheus`` reads its ``/metrics`` into the plots'
series; ``backend`` is the :class:`~workbench.engine.backend.Backend` the engine loop drives; ``serve``
starts ``vllm``'s own API server as a child that never outlives the app. The KV view of a server is
built from vLLM's KV cache events (``kv_events*``), at the endpoints ``ServerSpec.kv_events_endpoints``
names.
"""
