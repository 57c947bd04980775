"""Test images for the chat's image tests, made with Pillow in the test's folder (never committed)."""
from __future__ import annotations

import io
from pathlib import Path

from workbench.engine.images import ImageInput, read_image

FORMATS = {".png": "PNG", ".jpg": "JPEG", ".webp": "WEBP", ".gif": "GIF"}


def image_bytes(suffix: str = ".png", size: tuple[int, int] = (64, 48), colour=(200, 40, 40)) -> bytes:
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", size, colour)
    ImageDraw.Draw(picture).ellipse((size[0] // 4, size[1] // 4, size[0] * 3 // 4, size[1] * 3 // 4),
                                    fill=(255, 255, 255))
    out = io.BytesIO()
    picture.save(out, FORMATS[suffix])
    return out.getvalue()


def image_file(folder: Path, name: str, size: tuple[int, int] = (64, 48), colour=(200, 40, 40)) -> Path:
    path = folder / name
    path.write_bytes(image_bytes(path.suffix, size, colour))
    return path


def image_input(name: str = "red.png", size: tuple[int, int] = (64, 48), colour=(200, 40, 40)) -> ImageInput:
    return read_image(image_bytes(Path(name).suffix, size, colour), name)


def truncated_file(folder: Path, name: str = "cut.png") -> Path:
    path = folder / name
    path.write_bytes(image_bytes(".png", (300, 200))[:200])
    return path


def not_an_image(folder: Path, name: str = "notes.png") -> Path:
    path = folder / name
    path.write_text("these are my notes, not a picture\n" * 20)
    return path
