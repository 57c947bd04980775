"""Images for the batch tests, written with Pillow into the test's folder, and batch lines that use them."""
from __future__ import annotations

import base64
import io
import json
import threading
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from PIL import Image

KINDS = {".png": "PNG", ".jpg": "JPEG", ".webp": "WEBP", ".gif": "GIF"}


def image_bytes(suffix: str = ".png", size: tuple[int, int] = (48, 32), shade: int = 0) -> bytes:
    """A small picture in the format the suffix names; ``shade`` makes each one's content its own."""
    picture = Image.new("RGB", size, ((shade * 37) % 256, (shade * 91) % 256, 128))
    for x in range(0, size[0], 4):  # a pattern, so that every format has pixels to decode
        picture.putpixel((x, x % size[1]), (255, 255, 255))
    out = io.BytesIO()
    picture.save(out, KINDS[suffix])
    return out.getvalue()


def write_image(folder: Path, name: str, shade: int = 0, size: tuple[int, int] = (48, 32)) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(image_bytes(path.suffix, size, shade))
    return path


def truncated_image(folder: Path, name: str = "cut.png") -> Path:
    """A PNG cut off halfway: its header reads, its pixels do not."""
    data = image_bytes(".png", (64, 64), 3)
    path = folder / name
    path.write_bytes(data[: len(data) // 2])
    return path


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def image_part(url: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}}


def image_line(custom_id: str, question: str, *urls: str, **body) -> str:
    """A ``vllm run-batch`` chat line whose user message has ``urls`` as image parts before its text."""
    content = [*(image_part(u) for u in urls), {"type": "text", "text": question}]
    body = {"model": "demo-vl", "messages": [{"role": "user", "content": content}], **body}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})


@contextmanager
def serving(folder: Path):
    """A real http.server on loopback serving ``folder``: yields its base URL and the paths asked for."""
    requested: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *_args) -> None:
            requested.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, name="test-image-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
