import asyncio, json, sys
EVENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line or line == b"\r\n":
            break
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    await reader.readexactly(n)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for i in range(EVENTS):
        payload = json.dumps({"id": "cmpl-x", "object": "text_completion", "created": 1, "model": "m",
                              "choices": [{"index": 0, "text": " tok", "logprobs": None, "finish_reason": None}]})
        data = f"data: {payload}\n\n".encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
        await asyncio.sleep(0.002)  # ~500 tokens/s a stream, as a server streams
    data = b"data: [DONE]\n\n"
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
    await writer.drain()
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()
asyncio.run(main())
