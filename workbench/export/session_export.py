"""A session as a folder and a zip of it: session.json, requests.csv, timeseries.csv, each plot as PNG
and SVG, the heatmap as PNG, report.html, the chat questions' images in ``images/`` (listed in
session.json with the request that sent them), and the searches of engine arguments begun in the session,
whole, in tune.json (Tools > Tune…). Runs on any thread (the window runs it off the GUI thread and
shows its progress); the pictures come in as bytes that the window rendered.
"""
from __future__ import annotations

import json
import math
import shutil
import zipfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from workbench.export.conversation import copy_images, image_file
from workbench.export.report import build_report
from workbench.export.tables import write_requests_csv, write_timeseries_csv
from workbench.sessions.compare import run_figures
from workbench.sessions.stored import engine_runs, open_read_only, question_images, requests, session, session_series
from workbench.storage.series import MEMORY, load_series
from workbench.tune.export import searches_during

FILES = ("session.json", "requests.csv", "timeseries.csv", "report.html")


@dataclass(frozen=True)
class Pictures:
    """What the window rendered: plot name -> (title, PNG bytes, SVG bytes), and the heatmap's PNG with
    its caption (what it shows, in words)."""

    plots: dict[str, tuple[str, bytes, bytes]] = field(default_factory=dict)
    heatmap_png: bytes | None = None
    heatmap_caption: str = ""


@dataclass(frozen=True)
class ExportProgress:
    fraction: float  # 0 to 1
    step: str  # what is being written


def _iso(seconds: float | None) -> str | None:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat() if seconds else None


def _finite(figures: dict) -> dict:
    return {k: (v if math.isfinite(v) else None) for k, v in figures.items()}


def session_document(summary, runs, figures, num_requests: dict[str, int]) -> dict:
    facts = summary.facts
    return {
        "session_id": summary.session_id,
        "app_version": facts.get("app_version"), "vllm_version": facts.get("vllm_version"),
        "torch_version": facts.get("torch_version"), "driver_version": facts.get("driver_version"),
        "gpus": facts.get("gpus") or [], "host": facts.get("host"),
        "started_s": summary.started_s, "ended_s": summary.ended_s,
        "started": _iso(summary.started_s), "ended": _iso(summary.ended_s),
        "engine_runs": [{
            "number": index + 1, "run_key": run.run_key, "start_id": run.start_id, "model": run.model,
            "config": run.resolved_config(), "engine_reported": run.info,
            "planned_kv_blocks": run.planned_kv_blocks,
            "started_s": run.started_s, "ready_s": run.ready_s, "stopped_s": run.stopped_s,
            "started": _iso(run.started_s), "stopped": _iso(run.stopped_s), "end_message": run.end_message,
            "num_requests": num_requests.get(run.run_key, 0), "figures": _finite(figures[index]),
        } for index, run in enumerate(runs)],
    }


def export_session(db_path: Path | str, session_id: str, folder: Path | str,
                   pictures: Pictures = Pictures()) -> Iterator[ExportProgress]:
    """Writes the session into ``folder`` (made; it must not exist yet) and ``folder``.zip, yielding
    progress. On a failure nothing half-written is left under either name."""
    folder = Path(folder)
    if folder.exists():
        raise FileExistsError(f"{folder} exists already: choose a new name for the export")
    partial = folder.with_name(folder.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield from _write(db_path, session_id, partial, pictures)
        partial.rename(folder)
        yield ExportProgress(0.95, "zip")
        _zip(folder, folder.with_name(folder.name + ".zip"))
        yield ExportProgress(1.0, "done")
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _write(db_path, session_id: str, folder: Path, pictures: Pictures) -> Iterator[ExportProgress]:
    yield ExportProgress(0.0, "reading the database")
    connection = open_read_only(db_path)
    try:
        summary = session(connection, session_id)
        if summary is None:
            raise LookupError(f"no session {session_id} in {db_path}")
        runs = engine_runs(connection, session_id)
        found = requests(connection, [run.run_key for run in runs])
        figures = [run_figures([r for r in found if r.run_key == run.run_key], load_series(connection, run.run_key))
                   for run in runs]
        series = session_series(connection, runs)
        memory = session_series(connection, runs, MEMORY)
        images = question_images(connection, [run.run_key for run in runs])
    finally:
        connection.close()
    counts = {run.run_key: sum(1 for r in found if r.run_key == run.run_key) for run in runs}
    document = session_document(summary, runs, figures, counts)
    document["images"] = _copy_session_images(images, folder, Path(db_path).parent / "images")
    searches = searches_during(Path(db_path).parent / "tune", summary.started_s, summary.ended_s)
    document["tune_searches"] = [search["name"] for search in searches]  # each whole in tune.json
    if searches:
        (folder / "tune.json").write_text(json.dumps(searches, indent=2))
    (folder / "session.json").write_text(json.dumps(document, indent=2))
    total = max(1, len(found))
    for done in write_requests_csv(folder / "requests.csv", found, runs):
        yield ExportProgress(0.1 + 0.6 * done / total, f"requests.csv: {done:,} of {len(found):,}")
    write_timeseries_csv(folder / "timeseries.csv", series, runs, summary.started_s, memory)
    yield ExportProgress(0.75, "pictures")
    for name, (_, png, svg) in pictures.plots.items():
        (folder / f"plot-{name}.png").write_bytes(png)
        (folder / f"plot-{name}.svg").write_bytes(svg)
    if pictures.heatmap_png:
        (folder / "heatmap.png").write_bytes(pictures.heatmap_png)
    yield ExportProgress(0.85, "report.html")
    plots = {name: (title, png) for name, (title, png, _) in pictures.plots.items()}
    (folder / "report.html").write_text(build_report(summary, runs, figures, found, plots, pictures.heatmap_png,
                                                     pictures.heatmap_caption),
                                        encoding="utf-8")


def _copy_session_images(images, folder: Path, images_dir: Path) -> list[dict]:
    """The chat questions' images copied into ``images/`` (one file per content); their entries for
    session.json, each naming its file (``missing`` where the data folder no longer holds it)."""
    missing = set(copy_images([ref for _, _, ref in images], folder / "images", images_dir))
    return [{"request_id": request_id, "conversation": title, "file": image_file(ref, "images"),
             "missing": ref in missing, **asdict(ref)} for request_id, title, ref in images]


def _zip(folder: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
    partial.replace(target)
