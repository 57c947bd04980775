"""An offscreen picture of a chat with images, for the docs, with the real engine on the vision demo model
(Idefics3):

    python -m workbench.bench.gui.image_shots docs

writes ``chat-images.png``: the window's Chat tab after a question with two images was answered (their
thumbnails above the question, the reply's figures with its image tokens), a third image waiting above
the input with the processor's resize note, and the heatmap beside it. The pictures are drawn here with
Pillow, in a temporary folder, and attached through the pane's own Attach image… path.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

QUESTION = "What do these two pictures show? Compare their colours."


def draw(path: Path, size: tuple[int, int], sky: tuple[int, int, int], ground: tuple[int, int, int],
         sun: tuple[int, int, int]) -> Path:
    """A small landscape: sky, ground and a sun, so the thumbnails read as pictures."""
    from PIL import Image, ImageDraw

    width, height = size
    picture = Image.new("RGB", size, sky)
    pen = ImageDraw.Draw(picture)
    pen.rectangle((0, height * 2 // 3, width, height), fill=ground)
    pen.ellipse((width // 8, height // 8, width // 8 + height // 4, height // 8 + height // 4), fill=sun)
    pen.polygon([(width // 2, height // 3), (width * 3 // 4, height * 2 // 3), (width // 4, height * 2 // 3)],
                fill=tuple(c // 2 for c in ground))
    picture.save(path)
    return path


def attach(window, paths: list[Path]) -> None:
    from workbench.bench.gui.screenshot import process_events_until

    chat = window.chat
    chat.choose_images = lambda parent: [str(p) for p in paths]
    chat.attach_button.click()
    process_events_until(lambda: not chat.attachments.reading, 60)


def main(folder: str) -> int:
    from workbench.app import demo_vl_engine_config
    from workbench.bench.gui.gui_stall import started_window
    from workbench.bench.gui.screenshot import process_events_until, save_small

    window, _ = started_window(demo_vl_engine_config(), keep=False)
    window.resize(1400, 860)
    chat = window.chat
    with tempfile.TemporaryDirectory(prefix="chat-images-") as temporary:
        pictures = Path(temporary)
        harbour = draw(pictures / "harbour.png", (320, 240), (120, 170, 230), (30, 80, 150), (250, 220, 80))
        forest = draw(pictures / "forest.jpg", (240, 320), (200, 220, 240), (40, 120, 50), (250, 180, 60))
        attach(window, [harbour, forest])
        chat.sampling.max_tokens.setValue(48)
        chat.input.setPlainText(QUESTION)
        chat.send()
        reply = chat.current.messages[-1]
        if not process_events_until(lambda: reply.status not in ("waiting", "streaming"), 300):
            print("the question was not answered:", reply.status, window.model.engine.message)
        print("reply:", reply.status, reply.error or reply.text[:80], reply.figures)
        attach(window, [draw(pictures / "night sky.png", (1600, 1200), (10, 10, 40), (20, 30, 20), (240, 240, 200))])
        chat.input.setPlainText("And this one?")
        process_events_until(lambda: False, 0.5)
        save_small(window, str(Path(folder) / "chat-images.png"))
    window.close()
    return 0 if reply.status == "done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
