"""An offscreen picture of an image batch in the batch pane, for the docs, with the real engine on the vision
demo model (Idefics3):

    python -m workbench.bench.gui.batch_image_shots docs

writes ``batch-images.png``: the window's Batch tab after 12 ``vllm run-batch`` lines with images ran (a
path, a ``file://`` URL, a ``data:`` URL, one to three images a line), the two bad lines named above the
table (a missing file, a ``data:`` URL that is not base64), each row's images and image tokens in the
table, and a row's detail naming its images. The pictures are drawn here with Pillow, in a temporary folder.
"""
from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

SIZE = (64, 48)
QUESTIONS = ("What is in this picture?", "Describe the colours.", "Which shapes do you see?",
             "Is it day or night?", "Count the stripes.", "What stands out?")


def draw(path: Path, shade: int) -> Path:
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", SIZE, (40 + shade * 30 % 200, 90, 160 - shade * 17 % 120))
    ImageDraw.Draw(picture).ellipse((8 + shade, 6, 40 + shade, 38), fill=(240, 220, 60))
    path.parent.mkdir(parents=True, exist_ok=True)
    picture.save(path)
    return path


def batch_file(folder: Path) -> Path:
    """12 chat lines with images, two of them bad (lines 4 and 9)."""
    pictures = [draw(folder / "photos" / f"{name}.png", n) for n, name in enumerate(("harbour", "forest", "street"))]
    data = f"data:image/png;base64,{base64.b64encode(draw(folder / 'inline.png', 5).read_bytes()).decode()}"
    lines = []
    for number in range(1, 13):
        urls = {4: ["photos/lighthouse.png"], 9: ["data:image/png;base64,not base64!"],
                6: [f"photos/{pictures[0].name}", data, pictures[2].as_uri()], 11: [data]}.get(
            number, [f"photos/{pictures[number % 3].name}"] * (1 + number % 2))
        content = [*({"type": "image_url", "image_url": {"url": u}} for u in urls),
                   {"type": "text", "text": QUESTIONS[number % len(QUESTIONS)]}]
        lines.append(json.dumps({"custom_id": f"photo-{number}", "method": "POST", "url": "/v1/chat/completions",
                                 "body": {"model": "demo-vl", "messages": [{"role": "user", "content": content}],
                                          "max_tokens": 24}}))
    path = folder / "photos.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(folder: str) -> int:
    from workbench.app import demo_vl_engine_config
    from workbench.bench.gui.dataset_shots import shoot_run
    from workbench.bench.gui.gui_stall import started_window

    window, _ = started_window(demo_vl_engine_config(), keep=False)
    window.resize(1500, 900)
    with tempfile.TemporaryDirectory(prefix="batch-images-") as temporary:
        path = batch_file(Path(temporary))
        shoot_run(window, str(path), ("openai", None), 4, Path(folder) / "batch-images.png",  # line 6: 3 images
                  detail_px=250)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
