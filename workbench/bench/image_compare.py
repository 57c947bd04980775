"""Image requests two ways on one engine: (a) plain vLLM, (d) the app with its window, taking turns.

Every request is one picture and a question, rendered through the model's chat template with the
image's placeholder, as a user of plain vLLM writes it: ``add_request(id, {"prompt": text,
"multi_modal_data": {"image": picture}}, params)``, the picture decoded from the file's bytes inside the
timed part (the app decodes them too). (d) sends the same kind of requests through the window's engine
path (``ChatRequest`` with ``Message.images``), while its heatmap, plots and memory panel run; its GUI
stall is measured then. The pictures are fresh each run (no prefix-cache or encoder-cache hits between
runs), and the same for both paths of one repeat. No Qt here: (d) is handed in (``bench.gui.image_app_path``).
"""
from __future__ import annotations

import io
import random
import statistics
import time
from dataclasses import dataclass, field

from workbench.bench.compare import CpuClock, RunStats, add_timings, set_tracking
from workbench.bench.engine_bench import BenchSession, record_arrivals
from workbench.engine.backend import ChatRequest, Message
from workbench.engine.images import ImageInput, read_image, to_rgb
from workbench.engine.sampling import SamplingSettings
from workbench.engine.sampling_params import to_sampling_params

QUESTION = "What is in this picture? Describe it."


@dataclass(frozen=True)
class ImageWorkload:
    num_requests: int = 256
    output_len: int = 128
    width: int = 640
    height: int = 480
    repeats: int = 6


@dataclass
class ImageComparison:
    workload: ImageWorkload
    runs: dict[str, list[RunStats]] = field(default_factory=lambda: {"a": [], "d": []})
    stalls: list[dict] = field(default_factory=list)  # (d)'s GUI stall figures, one per run
    image_tokens: int = 0  # tokens of one picture, as the app's engine counted them (0: not known)
    environment: dict = field(default_factory=dict)

    def pair_ratios(self) -> list[float]:
        """(d) / (a) output tok/s of each repeat."""
        return [d.tokens_per_s / a.tokens_per_s for a, d in zip(self.runs["a"], self.runs["d"]) if a.tokens_per_s]


def picture(seed: int, width: int, height: int) -> ImageInput:
    """A JPEG of coloured bands and boxes, different for every seed (a photo's size, a photo's format)."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (width, height), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(24):
        x, y = rng.randrange(width), rng.randrange(height)
        box = (x, y, x + rng.randrange(20, width // 2), y + rng.randrange(20, height // 2))
        draw.rectangle(box, fill=tuple(rng.randrange(256) for _ in range(3)))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return read_image(out.getvalue(), f"picture-{seed}.jpg")


def image_requests(workload: ImageWorkload, seed: int, tag: str, sampling: SamplingSettings) -> list[ChatRequest]:
    pictures = [picture(seed * 100_000 + i, workload.width, workload.height) for i in range(workload.num_requests)]
    return [ChatRequest(f"{tag}-{i}", (Message("user", QUESTION, images=(image,)),), sampling)
            for i, image in enumerate(pictures)]


def plain_prompt(tokenizer, request: ChatRequest) -> str:
    """The chat template's text with one image placeholder a picture, as plain vLLM's users write it."""
    messages = [{"role": m.role, "content": [*({"type": "image"} for _ in m.images), {"type": "text", "text": m.content}]}
                for m in request.messages]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def run_plain_images(session: BenchSession, requests: list[ChatRequest], sampling: SamplingSettings) -> RunStats:
    """(a): vLLM as shipped (no block tracking, no workbench stat logger), ``add_request`` then ``step()``."""
    set_tracking(session, False)
    session.set_stats_logging(False)
    engine, tokenizer = session.engine, session.tokenizer
    params = to_sampling_params(sampling, session.config.max_model_len, True)
    stats, arrivals = RunStats("a"), {}
    cpu = CpuClock(session.engine_pids)
    started = time.perf_counter()
    for request in requests:
        pictures = [to_rgb(image) for m in request.messages for image in m.images]
        engine.add_request(f"a-{started}-{request.request_id}",
                           {"prompt": plain_prompt(tokenizer, request), "multi_modal_data": {"image": pictures}},
                           params)
    while engine.has_unfinished_requests():
        stats.output_tokens += record_arrivals(engine.step(), time.perf_counter(), arrivals)
    stats.elapsed_s = time.perf_counter() - started
    cpu.stop(stats)
    add_timings(stats, started, arrivals.values())
    return stats


def run_plain_in_client(loop, requests: list[ChatRequest], sampling: SamplingSettings) -> RunStats:
    """(a) in the engine-client process, on the engine it holds (sent as ``CallInClient``)."""
    loop._release_engine()
    return run_plain_images(loop.bench_session, requests, sampling)


def summary(result: ImageComparison) -> str:
    """The comparison as Markdown: each path's rates, the paired ratios, (d)'s GUI stalls."""
    w = result.workload
    lines = [f"{w.num_requests} requests, one {w.width} × {w.height} JPEG and a question each "
             f"({result.image_tokens or '?'} image tokens), {w.output_len} output tokens (ignore_eos), "
             f"{w.repeats} paired repeats; {result.environment}", "",
             "| path | output tok/s median | min–max | TTFT p50 / p99 ms |", "|---|---|---|---|"]
    for key, name in (("a", "(a) plain vLLM"), ("d", "(d) the app, window offscreen")):
        runs = result.runs[key]
        rates = [r.tokens_per_s for r in runs]
        ttft = sorted(t for r in runs for t in r.ttft_s)
        if rates:
            p99 = ttft[min(len(ttft) - 1, int(0.99 * len(ttft)))] * 1e3 if ttft else float("nan")
            lines.append(f"| {name} | {statistics.median(rates):,.0f} | {min(rates):,.0f}–{max(rates):,.0f} | "
                         f"{statistics.median(ttft) * 1e3 if ttft else float('nan'):.0f} / {p99:.0f} |")
    ratios = result.pair_ratios()
    if ratios:
        lines += ["", f"d/a, each repeat: {', '.join(f'{r:.3f}' for r in ratios)}; median **{statistics.median(ratios):.3f}**"]
    if result.stalls:
        lines += ["", "| (d) run | GUI stall p50 ms | p99 | max | heatmap frames |", "|---|---|---|---|---|"]
        lines += [f"| {i + 1} | {s['stall_ms_p50']:.1f} | {s['stall_ms_p99']:.1f} | {s['stall_ms_max']:.1f} | "
                  f"{s.get('heatmap_frames', '')} |" for i, s in enumerate(result.stalls)]
        lines.append(f"\np99 stall over all (d) runs' ticks: **{result.environment.get('stall_p99_all', float('nan')):.1f} ms**")
    return "\n".join(lines)
