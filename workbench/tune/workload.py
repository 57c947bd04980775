"""A search's workload as requests and their arrival offsets: generated, a batch file's prompts, or a stored
session's traffic replayed. Each trial sends the same requests at the same offsets, greedy (temperature 0)
and to their full length (EOS ignored), so trials differ only in the engine's settings."""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from workbench.batch.formats import detect_format, prompt_column_of
from workbench.batch.loader import PromptLoader
from workbench.batch.records import BatchPrompt
from workbench.batch.table_files import TableError
from workbench.engine.backend import ChatRequest, Message
from workbench.engine.sampling import SamplingSettings
from workbench.tune.problems import TuneRefused
from workbench.tune.values import Goal, WorkloadSpec

# Token ids drawn for generated prompts: below every vocabulary the workbench runs (the demo's has 1,024),
# above the special tokens at the start of most.
TOKEN_IDS = range(16, 1000)


@dataclass(frozen=True)
class WorkloadItem:
    """One request of the workload: token ids (generated, replayed) or a prompt's text or messages."""

    max_tokens: int
    prompt_token_ids: tuple[int, ...] | None = None
    prompt: str | None = None
    messages: tuple[Message, ...] | None = None


@dataclass(frozen=True)
class Workload:
    items: tuple[WorkloadItem, ...]
    offsets_s: tuple[float, ...]  # arrival of each, from the first; all 0.0: sent at once
    concurrency: int | None = None  # closed loop: this many in flight

    @property
    def num_requests(self) -> int:
        return len(self.items)

    def requests(self, prefix: str) -> tuple[ChatRequest, ...]:
        """The workload as engine requests, ids ``<prefix>-<index>``, first come first served (priority 0),
        each timing every gap between its tokens (the trial's p99 ITL)."""
        return tuple(ChatRequest(f"{prefix}-{index}", item.messages or (),
                                 SamplingSettings(temperature=0.0, top_p=1.0, max_tokens=item.max_tokens,
                                                  ignore_eos=True),
                                 prompt_token_ids=item.prompt_token_ids, prompt=item.prompt, record_gaps=True)
                     for index, item in enumerate(self.items))


def _length(rng: random.Random, mean: int, spread: int, high: int) -> int:
    return max(1, min(high, round(rng.gauss(mean, spread)) if spread else mean))


def poisson_offsets(num: int, rate_per_s: float | None, seed: int) -> tuple[float, ...]:
    """Arrival offsets of ``num`` requests, Poisson at ``rate_per_s`` (the first at 0); all 0 for None."""
    if not rate_per_s:
        return (0.0,) * num
    rng, now, offsets = random.Random(seed + 1), 0.0, []
    for _ in range(num):
        offsets.append(now)
        now += rng.expovariate(rate_per_s)
    return tuple(offsets)


def generated(spec: WorkloadSpec, max_model_len: int, rate_per_s: float | None) -> Workload:
    rng = random.Random(spec.seed)
    prefix = tuple(rng.choice(TOKEN_IDS) for _ in range(spec.shared_prefix_tokens))
    items = []
    for _ in range(spec.num_requests):
        output = _length(rng, spec.output_tokens_mean, spec.output_tokens_spread, max_model_len // 2)
        prompt_len = _length(rng, spec.prompt_tokens_mean, spec.prompt_tokens_spread, max_model_len - output - 1)
        shared = prefix if prefix and rng.random() < spec.shared_prefix_share else ()
        own = tuple(rng.choice(TOKEN_IDS) for _ in range(max(1, prompt_len - len(shared))))
        items.append(WorkloadItem(output, prompt_token_ids=(shared + own)[:max_model_len - output - 1]))
    return Workload(tuple(items), poisson_offsets(len(items), rate_per_s, spec.seed), spec.closed_loop_concurrency)


def from_file(spec: WorkloadSpec, rate_per_s: float | None) -> Workload:
    """A batch file's prompts, read as the Batch pane reads them; a file it would not run as it is refused
    with the pane's own messages."""
    path = Path(spec.path)
    if not path.exists():
        raise TuneRefused([f"The workload file {path} does not exist: choose the file again."])
    try:
        fmt = detect_format(path)  # a CSV or a sheet by the column the Batch pane's dialog would choose
        loader = PromptLoader(path, fmt, prompt_column_of(path, fmt), on_problem="skip")
        results = loader.read_all()
    except (OSError, TableError) as exc:
        raise TuneRefused([f"The workload file {path} cannot be read: {exc}"]) from exc
    if loader.problems:
        listed = [f"{path.name}: {problem}" for problem in loader.problems[:20]]
        raise TuneRefused(listed + [f"{loader.summary()} Fix the lines named (the Batch pane shows them too) "
                                    "and start the search again: every prompt of the workload must run."])
    prompts: list[BatchPrompt] = list(results.prompts)
    if not prompts:
        raise TuneRefused([f"The workload file {path} holds no prompts: choose a file with at least one."])
    if any(p.images for p in prompts):
        raise TuneRefused([f"The workload file {path} has prompts with images: a search sends text prompts; "
                           "choose a file without images."])
    items = tuple(WorkloadItem(int(dict(p.sampling).get("max_tokens", spec.output_tokens_mean)),
                               prompt=p.prompt, messages=p.messages) for p in prompts)
    return Workload(items, poisson_offsets(len(items), rate_per_s, spec.seed), spec.closed_loop_concurrency)


def from_session(spec: WorkloadSpec, database: Path, rate_per_s: float | None) -> Workload:
    """A stored session's requests (chat replies and batch rows) replayed: each arrives when it arrived
    then (finished less its end-to-end time), with its prompt and output lengths (prompts as token ids)."""
    from workbench.sessions.stored import engine_runs, open_read_only, requests

    connection = open_read_only(database)
    try:
        runs = engine_runs(connection, spec.session_id)
        found = requests(connection, [run.run_key for run in runs], with_text=False)
    finally:
        connection.close()
    timed = sorted((r.finished_s - (r.figures.get("e2e_s") or 0.0), r.figures) for r in found
                   if r.finished_s and r.figures.get("prompt_tokens") and r.figures.get("output_tokens"))
    if not timed:
        raise TuneRefused([f"Session {spec.session_id} has no finished requests with their figures to replay: "
                           "choose another session, or a generated workload."])
    rng = random.Random(spec.seed)
    items = tuple(WorkloadItem(int(f["output_tokens"]), prompt_token_ids=tuple(
        rng.choice(TOKEN_IDS) for _ in range(int(f["prompt_tokens"])))) for _, f in timed)
    offsets = (tuple(t - timed[0][0] for t, _ in timed) if rate_per_s is None
               else poisson_offsets(len(items), rate_per_s, spec.seed))
    return Workload(items, offsets, spec.closed_loop_concurrency)


def build_workload(spec: WorkloadSpec, goal: Goal, max_model_len: int, database: Path | None = None) -> Workload:
    """The workload ``spec`` names; the goal's rate (lowest TTFT at a rate) replaces the workload's own."""
    rate = goal.rate_per_s if goal.kind == "ttft" and goal.rate_per_s else spec.rate_per_s
    if spec.kind == "generated":
        if spec.num_requests < 1:
            raise TuneRefused(["A generated workload needs at least one request: set the number of requests."])
        if spec.output_tokens_mean + 1 >= max_model_len:
            raise TuneRefused([f"Outputs of {spec.output_tokens_mean} tokens do not fit max_model_len "
                               f"{max_model_len}: shorten the outputs or raise max_model_len."])
        return generated(spec, max_model_len, rate)
    if spec.kind == "file":
        return from_file(spec, rate)
    if database is None:
        raise TuneRefused(["No session database is open: choose a generated workload or a batch file."])
    return from_session(spec, database, rate)
