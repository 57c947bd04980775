"""The searches of a session for its export: each search begun while the session ran, whole (its spec, every
trial with its settings, figures or error, the verdict's reruns and the verdict), as plain JSON values."""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

SEARCHES_DB = "searches.db"  # workbench.tune.study's DB_NAME: read here without importing Optuna


def search_document(study) -> dict:
    attrs = study.study.user_attrs
    return {"name": study.spec.name, "spec": json.loads(attrs["spec"]), "created_s": attrs.get("created_s"),
            "elapsed_s": attrs.get("elapsed_s"), "ended": attrs.get("ended", ""),
            "trials": [asdict(r) for r in study.results()], "verdict_runs": study.verdict_runs(),
            "verdict": attrs.get("verdict")}


def searches_during(folder: Path, started_s: float, ended_s: float | None) -> list[dict]:
    """The searches kept in ``folder`` (the data folder's ``tune/``) begun between the two times (None: now)."""
    if not (folder / SEARCHES_DB).exists():
        return []
    from workbench.tune.study import SearchStudy, study_names

    end = ended_s if ended_s is not None else time.time()
    found = []
    for name in study_names(folder):
        study = SearchStudy.open(folder, name)
        if started_s <= (study.study.user_attrs.get("created_s") or 0.0) <= end:
            found.append(search_document(study))
    return sorted(found, key=lambda s: s["created_s"])
