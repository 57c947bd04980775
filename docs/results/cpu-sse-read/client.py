import asyncio, sys, time, resource, json
sys.path.insert(0, sys.argv[3] if len(sys.argv) > 3 else "/work/main")
import httpx
PORT, MODE, STREAMS = int(sys.argv[1]), sys.argv[2], 64
def cpu(): r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
async def one_httpx(client, lines):
    n = 0
    async with client.stream("POST", f"http://127.0.0.1:{PORT}/v1/completions", json={"a": 1}) as response:
        if lines:
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    json.loads(line[5:]); n += 1
        else:
            from workbench.remote.openai_client import _events
            async for payload in _events(response):
                n += 1
    return n
async def one_aiohttp(session):
    n = 0
    async with session.post(f"http://127.0.0.1:{PORT}/v1/completions", json={"a": 1}) as response:
        async for line in response.content:
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                json.loads(line[5:]); n += 1
    return n
async def one_workbench(session):
    from workbench.remote.sse_stream import events
    n = 0
    async with session.post(f"http://127.0.0.1:{PORT}/v1/completions", json={"a": 1}) as response:
        async for payload in events(response):
            n += 1
    return n
async def main():
    start, wall = cpu(), time.perf_counter()
    if MODE == "workbench":
        from workbench.remote.sse_stream import open_stream_session
        from workbench.remote.spec import ServerSpec
        s = open_stream_session(ServerSpec(f"http://127.0.0.1:{PORT}"))
        counts = await asyncio.gather(*[one_workbench(s) for _ in range(STREAMS)])
        await s.close()
    elif MODE == "aiohttp":
        import aiohttp
        async with aiohttp.ClientSession() as s:
            counts = await asyncio.gather(*[one_aiohttp(s) for _ in range(STREAMS)])
    else:
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=None, max_keepalive_connections=None)) as c:
            counts = await asyncio.gather(*[one_httpx(c, MODE == "lines") for _ in range(STREAMS)])
    used, total = cpu() - start, sum(counts)
    print(f"{MODE}: {total} events, {used / total * 1e6:.1f} us CPU per event, wall {time.perf_counter() - wall:.1f} s")
asyncio.run(main())
