"""The prompt tokens an image takes, before anything starts: the model's image processor as its files
describe it, with the engine's ``mm_processor_kwargs`` on top, and the arithmetic of transformers' own
processors (read in transformers 5.19).

- Qwen2-VL and Qwen2.5-VL (``Qwen2VLImageProcessor``): ``smart_resize`` scales the image to sides that are
  multiples of ``patch_size * merge_size`` (28) with its area between ``min_pixels`` and ``max_pixels``;
  each 28 x 28 square is one token, so an image is at most ``max_pixels // 784`` tokens, between the two
  markers ``<|vision_start|>`` and ``<|vision_end|>``.
- Idefics3 (``Idefics3ImageProcessor``, ``Idefics3Processor``): the image is scaled to ``size.longest_edge``
  and, beyond one tile, cut into tiles of ``max_image_size.longest_edge`` plus the whole image as one more;
  each tile is ``image_seq_len`` tokens after ``<fake_token_around_image><row_R_col_C>``, each row of
  tiles ends with a newline, and the whole image comes last between ``<fake_token_around_image>
  <global-img>`` and ``<fake_token_around_image>``.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

QWEN2_VL, IDEFICS3 = "qwen2-vl", "idefics3"
KINDS = {"qwen2_vl": QWEN2_VL, "qwen2_5_vl": QWEN2_VL, "idefics3": IDEFICS3}  # config.json's model_type
QWEN_MARKERS = 2  # <|vision_start|> and <|vision_end|>
MAX_ASPECT = 200  # smart_resize refuses a longer side more than 200 times the shorter
IDEFICS3_MAX_SIDE = 4096  # Idefics3's MAX_IMAGE_SIZE: no side beyond it after the first resize


@dataclass(frozen=True)
class ImageProcessorFacts:
    """What the model's image processor does to an image's size (transformers' defaults where its files
    say nothing)."""

    kind: str  # QWEN2_VL or IDEFICS3
    patch_size: int = 14
    merge_size: int = 2
    min_pixels: int = 56 * 56
    max_pixels: int = 28 * 28 * 1280
    longest_edge: int = 4 * 364  # Idefics3: the image is scaled to this longest side
    tile_size: int = 364  # Idefics3: max_image_size.longest_edge
    image_seq_len: int = 169  # Idefics3: tokens a tile
    do_image_splitting: bool = True

    @property
    def factor(self) -> int:
        """Qwen2-VL: the side of the square that becomes one token (28)."""
        return self.patch_size * self.merge_size

    def with_kwargs(self, kwargs: dict | None) -> "ImageProcessorFacts":
        """As the engine's ``mm_processor_kwargs`` change it (vLLM hands them to the processor)."""
        kwargs = kwargs or {}
        size = kwargs.get("size") if isinstance(kwargs.get("size"), dict) else {}
        changes = {}
        if self.kind == QWEN2_VL:
            changes["max_pixels"] = kwargs.get("max_pixels", size.get("longest_edge", self.max_pixels))
            changes["min_pixels"] = kwargs.get("min_pixels", size.get("shortest_edge", self.min_pixels))
        else:
            changes["longest_edge"] = size.get("longest_edge", self.longest_edge)
            tile = kwargs.get("max_image_size") if isinstance(kwargs.get("max_image_size"), dict) else {}
            changes["tile_size"] = tile.get("longest_edge", self.tile_size)
            changes["do_image_splitting"] = bool(kwargs.get("do_image_splitting", self.do_image_splitting))
        return replace(self, **{k: int(v) if k != "do_image_splitting" else v for k, v in changes.items()})

    def image_tokens(self, width: int, height: int) -> int:
        """The prompt tokens of one image of this size, its markers included."""
        if self.kind == QWEN2_VL:
            h_bar, w_bar = smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
            return (h_bar // self.factor) * (w_bar // self.factor) + QWEN_MARKERS
        rows, cols = self.tiles(width, height)
        whole = self.image_seq_len + 4 if rows else self.image_seq_len + 3  # newline, fakes, <global-img>
        return rows * cols * (self.image_seq_len + 2) + rows + whole

    def largest_image_tokens(self) -> int:
        """The most tokens one image can take: at max_pixels (Qwen2-VL), a square at the longest edge
        (Idefics3)."""
        if self.kind == QWEN2_VL:
            return self.max_pixels // (self.factor * self.factor) + QWEN_MARKERS
        return self.image_tokens(self.longest_edge, self.longest_edge)

    def tiles(self, width: int, height: int) -> tuple[int, int]:
        """Idefics3: the rows and columns of tiles (0, 0: the image is one tile, no split)."""
        if not self.do_image_splitting:
            return 0, 0
        height, width = _idefics3_resized(height, width, self.longest_edge)
        tile = self.tile_size
        rows, cols = math.ceil(height / tile), math.ceil(width / tile)
        return (rows, cols) if rows * tile > tile or cols * tile > tile else (0, 0)


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' ``qwen2_vl`` ``smart_resize``: sides that are multiples of ``factor``, the area within
    ``min_pixels`` and ``max_pixels``, the aspect ratio kept as far as that allows."""
    if max(height, width) / min(height, width) > MAX_ASPECT:
        raise ValueError(f"an image of {width} x {height} is more than {MAX_ASPECT} times as long as it is wide, "
                         "which Qwen2-VL's processor refuses")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _idefics3_resized(height: int, width: int, longest_edge: int) -> tuple[int, int]:
    """The size Idefics3's processor scales an image to before it cuts tiles (``get_number_of_image_patches``)."""
    aspect = width / height
    if width >= height:
        width, height = longest_edge, int(longest_edge / aspect)
        height += height % 2
    else:
        height, width = longest_edge, int(longest_edge * aspect)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    if max(height, width) > IDEFICS3_MAX_SIDE:
        if width >= height:
            width, height = IDEFICS3_MAX_SIDE, int(IDEFICS3_MAX_SIDE / aspect)
        else:
            height, width = IDEFICS3_MAX_SIDE, int(IDEFICS3_MAX_SIDE * aspect)
    return max(height, 1), max(width, 1)


def read_image_processor(folder: Path | None, config: dict) -> ImageProcessorFacts | None:
    """The image processor of a model folder (``preprocessor_config.json``, ``processor_config.json``),
    or transformers' defaults for its model type where the folder has none; None for a model type the
    planner does not count (its images' tokens are then not estimated)."""
    kind = KINDS.get(str(config.get("model_type", "")))
    if kind is None:
        return None
    saved: dict = {}
    for name in ("processor_config.json", "preprocessor_config.json"):
        try:
            data = json.loads((folder / name).read_text(encoding="utf-8")) if folder is not None else {}
        except (OSError, ValueError):
            continue
        saved.update(data.get("image_processor", {}) if isinstance(data.get("image_processor"), dict) else {})
        saved.update({k: v for k, v in data.items() if k != "image_processor"})
    facts = ImageProcessorFacts(kind)
    if kind == QWEN2_VL:
        facts = replace(facts, patch_size=int(saved.get("patch_size", facts.patch_size)),
                        merge_size=int(saved.get("merge_size", facts.merge_size)))
        return facts.with_kwargs({k: saved[k] for k in ("max_pixels", "min_pixels", "size") if k in saved})
    vision = config.get("vision_config") or {}
    default_seq = (int(vision.get("image_size", 364)) // int(vision.get("patch_size", 14))) ** 2 // \
        int(config.get("scale_factor", 2)) ** 2
    facts = replace(facts, image_seq_len=int(saved.get("image_seq_len", default_seq)))
    return facts.with_kwargs({k: saved[k] for k in ("size", "max_image_size", "do_image_splitting") if k in saved})
