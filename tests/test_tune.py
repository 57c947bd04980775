"""Tune before any engine starts: a search that cannot run is refused, naming each cause and its fix, and no
engine command leaves the model; the engine loop's schedule; the verdict's arithmetic; Optuna's storage."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from workbench.engine.backend import ChatRequest, SamplingSettings
from workbench.engine.commands import Abort, StartEngine, SubmitAll, SubmitScheduled
from workbench.engine.events import EngineState, StateChanged
from workbench.engine.metrics import RequestFigures
from workbench.engine.schedule import RequestSchedule
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands, waiting_note
from workbench.tune.measure import TrialMeasure, pareto_front
from workbench.tune.problems import TuneRefused
from workbench.tune.run import HOLD, START_LIMIT_FLOOR_S, TuneRun
from workbench.tune.space import default_space
from workbench.tune.study import SearchStudy, resumable
from workbench.tune.values import (Goal, SearchParameter, SearchSpace, TrialFigures, TrialResult, TuneSpec,
                                   WorkloadSpec)
from workbench.tune.verdict import goal_unmet, make_verdict


@pytest.fixture
def search(tmp_path):
    """A search on a model whose engine is never started: every command it posts is kept."""
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted = []
    run = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune")
    return run, posted


def small_spec(**changes) -> TuneSpec:
    values = dict(workload=WorkloadSpec(num_requests=4, prompt_tokens_mean=16, output_tokens_mean=4),
                  goal=Goal(), space=default_space("0.32.0", "cpu"), time_budget_s=600, max_trials=2)
    values.update(changes)
    return TuneSpec(**values)


def test_a_space_value_vllm_rejects_is_refused_before_anything_starts(search):
    run, posted = search
    space = default_space("0.32.0", "cpu").with_parameter(SearchParameter("block_size", "choice", choices=(16, 32)))
    space = space.with_parameter(SearchParameter("max_batch_size", "int", 1, 8))
    space = space.with_parameter(SearchParameter("kv_cache_dtype", "choice", choices=("auto", "fp9")))
    with pytest.raises(TuneRefused) as refused:
        run.start(small_spec(space=space))
    text = "\n".join(refused.value.messages)
    assert "engine.block_size = 16: on CPU vLLM needs a multiple of 32" in text, text
    assert "max_batch_size" in text and "the nearest option is max_num_seqs" in text, text
    assert "engine.kv_cache_dtype = 'fp9' is not a valid choice" in text, text
    assert "untick" in text
    assert posted == [] and not run.running and run.resumable() == []


def test_a_budget_shorter_than_one_engine_start_is_refused_naming_the_start(search):
    run, posted = search
    run.last_start_s = 41.0
    with pytest.raises(TuneRefused) as refused:
        run.start(small_spec(time_budget_s=30))
    assert refused.value.messages == ("The time budget (30 s) is shorter than one engine start here (41 s, "
                                      "measured at the last start): give at least 82 s, a start and its measure.",)
    assert posted == []


def test_a_workload_file_the_batch_pane_refuses_is_refused_with_its_messages(search, tmp_path):
    run, posted = search
    path = tmp_path / "prompts.jsonl"
    path.write_text(json.dumps({"prompt": "one"}) + "\n{not json\n" + json.dumps({"prompt": "three"}) + "\n")
    with pytest.raises(TuneRefused) as refused:
        run.start(small_spec(workload=WorkloadSpec(kind="file", path=str(path))))
    text = "\n".join(refused.value.messages)
    assert refused.value.messages[0].startswith("prompts.jsonl: line 2: broken JSON"), text
    assert "1 malformed line left out. Fix the lines named" in text
    missing = tmp_path / "gone.jsonl"
    with pytest.raises(TuneRefused, match="does not exist: choose the file again"):
        run.start(small_spec(workload=WorkloadSpec(kind="file", path=str(missing))))
    assert posted == [] and path.read_text().count("\n") == 3  # the user's file untouched


def test_a_csv_workload_is_read_by_the_column_the_batch_dialog_would_choose(tmp_path):
    """A CSV whose prompts are in a "question" column was refused: the search read only a column named "prompt"."""
    from workbench.tune.workload import from_file

    path = tmp_path / "gsm8k.csv"
    path.write_text('id;question;answer\n1;"How many clips, in all?";72\n2;Why?;because\n', encoding="utf-8")
    workload = from_file(WorkloadSpec(kind="file", path=str(path)), None)
    assert [item.prompt for item in workload.items] == ["How many clips, in all?", "Why?"]


def test_the_loop_schedule_hands_requests_over_at_their_offsets_or_a_number_at_a_time():
    requests = tuple(ChatRequest(f"r-{i}", ()) for i in range(4))
    open_loop = RequestSchedule(requests, (0.0, 0.5, 0.25, 1.0), None, now=100.0)
    assert [r.request_id for r in open_loop.due(100.0)] == ["r-0"]
    assert open_loop.wait_s(100.0) == pytest.approx(0.25)
    assert [r.request_id for r in open_loop.due(100.6)] == ["r-2", "r-1"]
    assert open_loop.take("r-3") and not open_loop and open_loop.wait_s(101.0) is None
    closed = RequestSchedule(requests, (), 2, now=0.0)
    assert [r.request_id for r in closed.due(0.0)] == ["r-0", "r-1"] and closed.due(5.0) == []
    closed.ended("r-0")
    assert [r.request_id for r in closed.due(5.0)] == ["r-2"]


def test_a_trial_lasts_from_the_first_arrival_to_the_last_end_as_vllm_timed_it():
    measure = TrialMeasure((0.0, 1.0), "p")
    for index, (ttft, e2e) in enumerate([(0.1, 0.5), (0.3, 2.0)]):
        figures = RequestFigures(prompt_tokens=8, cached_prompt_tokens=0, output_tokens=10, ttft_s=ttft,
                                 decode_tokens_per_s=50.0, e2e_s=e2e)
        measure.finished(measure.index_of(f"p-{index}"), figures, aborted=False, now_s=9.0)
    result = measure.result(Goal("goodput", ttft_p99_limit_s=0.2, itl_p99_limit_ms=30))
    assert result.duration_s == pytest.approx(3.0) and result.output_tokens_per_s == pytest.approx(20 / 3)
    assert result.goodput_tokens_per_s == pytest.approx(10 / 3)  # the second request's TTFT is over the limit
    assert result.ttft_p99_s == pytest.approx(0.3) and result.itl_p99_ms == pytest.approx(20.0)


def test_a_trials_p99_itl_counts_every_gap_so_a_few_slow_steps_show_where_each_mean_stays_low():
    """TPOT (each request's mean gap) hides three half-second stalls in a hundred tokens; the p99 over
    every gap between two tokens of the trial (as vllm bench serve's p99 ITL) shows them."""
    measure = TrialMeasure((0.0, 0.0), "p")
    for index, gaps in enumerate([[0.010] * 100, [0.010] * 97 + [0.5] * 3]):
        figures = RequestFigures(prompt_tokens=8, cached_prompt_tokens=0, output_tokens=101, ttft_s=0.1,
                                 decode_tokens_per_s=len(gaps) / sum(gaps), e2e_s=0.1 + sum(gaps))
        measure.finished(index, figures, aborted=False, now_s=9.0, gaps_s=tuple(gaps))
    result = measure.result(Goal("goodput", ttft_p99_limit_s=1.0, itl_p99_limit_ms=30))
    assert result.itl_p99_ms == pytest.approx(24.7)  # the slower request's mean gap: within the 30 ms limit
    assert result.goodput_tokens_per_s == result.output_tokens_per_s  # both count, by their means
    assert result.gap_p99_ms == pytest.approx(500.0)


def test_the_verdict_pairs_reruns_in_order_and_a_goal_no_trial_met_names_the_closest():
    best = TrialResult(2, {"max_num_seqs": 32}, "complete", goal_value=110.0)
    runs = [{"role": role, "value": value, "error": ""} for role, value in
            [("defaults", 100.0), ("best", 110.0), ("defaults", 100.0), ("best", 120.0), ("defaults", 50.0),
             ("best", None)]]
    verdict = make_verdict(best, runs, Goal())
    assert (verdict.ratio_median, verdict.ratio_min, verdict.ratio_max) == pytest.approx((1.15, 1.1, 1.2))
    assert "1 rerun failed" in verdict.text and "trial 2 (max_num_seqs=32)" in verdict.text
    itself = make_verdict(TrialResult(0, {}, "complete", goal_value=100.0), runs[:4], Goal())
    assert itself.text.startswith("No setting beat vLLM's defaults on highest output tok/s: they were the best "
                                  "trial. Rerun against themselves, they measured 1.100–1.200×"), itself.text
    assert itself.text.endswith("(the two sets of reruns averaged 115.0 and 100.0 tok/s)."), itself.text
    # goodput where vLLM's defaults served nothing within the limits: infinitely better, said in words
    goodput = Goal("goodput", ttft_p99_limit_s=2.0, itl_p99_limit_ms=50.0)
    zero = [{"role": role, "value": value, "error": ""} for role, value in
            [("defaults", 0.0), ("best", 900.0), ("defaults", 300.0), ("best", 900.0), ("defaults", 0.0),
             ("best", 0.0)]]
    won = make_verdict(TrialResult(3, {"max_num_batched_tokens": 2048}, "complete", goal_value=900.0), zero, goodput)
    assert (won.ratio_median, won.ratio_min, won.ratio_max) == (float("inf"), 3.0, float("inf"))  # both 0: no pair
    assert "∞× vLLM's defaults" in won.text and "(median of 2 paired reruns, 3.000–∞)" in won.text, won.text
    assert won.text.endswith("vLLM's defaults served no request within the goal's limits in 2 of 3 reruns.")
    assert won.notes == "vLLM's defaults served no request within the goal's limits in 2 of 3 reruns."
    assert "best 600.0 against 100.0 tok/s." in won.text, won.text  # means, as tok/s (not 6e+02)
    assert verdict.notes == "1 rerun failed and was left out."
    from workbench.ui.tune_text import verdict_html
    shown = verdict_html(won, goodput)  # the window: the headline, the values, the settings, then the notes once
    assert shown.count("∞× the defaults") == 1 and shown.endswith(won.notes.replace("'", "&#x27;")), shown
    goal = Goal("goodput", ttft_p99_limit_s=0.01)
    trials = [TrialResult(0, {}, "complete", TrialFigures(100.0, 0.0, 0.2, 0.5, 5.0, 4, 0, 1.0), goal_value=0.0),
              TrialResult(1, {"max_num_seqs": 8}, "complete", TrialFigures(90.0, 0.0, 0.1, 0.3, 4.0, 4, 0, 1.0),
                          goal_value=0.0)]
    message = goal_unmet(trials, goal)
    assert message.startswith("No setting met the goal (highest goodput (TTFT ≤ 0.01 s))")
    assert "The closest was trial 1 (p99 TTFT 0.30 s" in message and "Loosen the limits" in message
    assert pareto_front([(0, 100.0, 0.5), (1, 90.0, 0.3), (2, 80.0, 0.4)]) == (0, 1)


def test_the_line_that_says_what_a_search_runs_counts_its_settings_in_words():
    from workbench.ui.tune_text import search_summary
    one = SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64, log=True),))
    line = search_summary(small_spec(name="w2", space=one, time_budget_s=900))
    assert line == ("w2: " + small_spec().workload.describe() + " · highest output tok/s · TPE · budget 15 min 00 s · "
                    "1 setting searched"), line
    searched = len(default_space("0.32.0", "cpu").searched())
    assert search_summary(small_spec(name="w2")).endswith(f" · {searched} settings searched") and searched > 1


def test_a_search_kept_in_optunas_storage_lists_as_resumable_until_it_ends(tmp_path):
    spec = small_spec(name="kept", space=SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64, log=True),
                                                      SearchParameter("performance_mode", "choice",
                                                                      choices=("balanced", "throughput")))))
    study = SearchStudy.create(tmp_path, spec)
    first, params = study.ask()
    assert params == {}  # trial 0: vLLM's defaults
    study.tell_complete(first, TrialResult(0, {}, "complete", TrialFigures(50.0), goal_value=50.0))
    second, params = study.ask()
    assert params == {"performance_mode": "throughput"}
    assert resumable(tmp_path) == ["kept"]
    again = SearchStudy.load(tmp_path, "kept")  # as after a killed app: trial 1 was left running
    assert [(r.number, r.state) for r in again.results()] == [(0, "complete"), (1, "failed")]
    assert again.results()[1].error.startswith("the search ended during this trial")
    assert again.ask()[1] == {"performance_mode": "throughput"}  # asked again
    again.end("stopped")
    assert resumable(tmp_path) == []


def test_the_session_export_takes_the_searches_begun_in_the_session_whole(tmp_path):
    from workbench.tune.export import searches_during

    spec = small_spec(name="in the session", space=SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64),)))
    study = SearchStudy.create(tmp_path, spec)
    trial, params = study.ask()
    study.tell_complete(trial, TrialResult(0, params, "complete", TrialFigures(75.0, num_requests_done=4),
                                           goal_value=75.0))
    created = study.study.user_attrs["created_s"]
    [search] = searches_during(tmp_path, created - 1, None)
    assert search["name"] == "in the session" and search["spec"]["workload"]["num_requests"] == 4
    assert search["trials"][0]["figures"]["output_tokens_per_s"] == 75.0 and search["ended"] == ""
    assert searches_during(tmp_path, created + 1, None) == []  # begun before the session: not its own
    assert searches_during(tmp_path / "none", 0.0, None) == []


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def engine_now(model: AppModel, state: EngineState, start_id: int, message: str = "") -> None:
    model.apply(StateChanged(state, message, start_id))


def search_on_a_ready_engine(tmp_path, max_trials: int):
    """The user's engine ready, then a search begun on it: (model, commands posted, the one owner, the search)."""
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted = []
    commands = EngineCommands(model, posted.append)
    commands.start()
    engine_now(model, EngineState.READY, model.latest_start_id)
    run = TuneRun(model, commands, tmp_path / "tune")
    run.start(small_spec(max_trials=max_trials, repeats=1))
    return model, posted, commands, run


def test_a_question_asked_during_a_search_waits_saying_why_and_goes_to_the_users_engine_after(tmp_path):
    model, posted, commands, run = search_on_a_ready_engine(tmp_path, max_trials=1)
    conversation = model.new_conversation()
    request = commands.ask(conversation.conversation_id, "Still there?", SamplingSettings())
    assert not [c for c in posted if isinstance(c, SubmitAll)], "a question sent into a trial's engine"
    reply = conversation.messages[-1]
    assert reply.status == "waiting"
    assert waiting_note(model.engine, False, model.engine_hold) == f"waiting: {HOLD}"
    run.stop()  # the trial is still starting: the search ends, the user's engine is started again
    assert not [c for c in posted if isinstance(c, SubmitAll)]  # the old engine is being replaced
    restart = posted[-1]
    assert isinstance(restart, StartEngine) and restart.config == EngineConfig(model="demo", max_model_len=512)
    engine_now(model, EngineState.READY, restart.start_id)
    sent = [c for c in posted if isinstance(c, SubmitAll)]
    assert [r.request_id for c in sent for r in c.requests] == [request.request_id] and not model.engine_hold


def test_a_search_stopped_for_the_users_own_start_does_that_in_place_of_their_engine_and_questions_wait_for_it(
        tmp_path):
    """Apply a preset mid-search, the user chose to stop the search: the preset's engine is the one start (not the
    user's engine first, then the preset's: two starts), and a question that waited goes to it, not to the trial's."""
    model, posted, commands, run = search_on_a_ready_engine(tmp_path, max_trials=2)
    engine_now(model, EngineState.READY, posted[-1].start_id)  # trial 0's engine: its workload goes in
    assert isinstance(posted[-1], SubmitScheduled)
    conversation = model.new_conversation()
    request = commands.ask(conversation.conversation_id, "Still there?", SamplingSettings())
    preset = EngineConfig(model="demo", max_model_len=1024)
    before = len(posted)
    run.stop(instead=lambda: commands.start(preset))
    assert not run.running and model.config == preset
    after = posted[before:]
    assert {type(c) for c in after} == {Abort, StartEngine}  # the trial's requests taken back, one start
    [start] = [c for c in after if isinstance(c, StartEngine)]
    assert start.config == preset and not model.engine_hold
    assert not [c for c in after if isinstance(c, SubmitAll)], "the question went to the trial's engine"
    engine_now(model, EngineState.READY, start.start_id)
    [sent] = [c for c in posted if isinstance(c, SubmitAll)]
    assert [r.request_id for r in sent.requests] == [request.request_id]


def test_a_question_asked_after_stop_engine_waits_though_the_engine_still_says_ready(tmp_path):
    """A search stopped for Stop engine lets its waiting questions go as the stop is posted: the engine, still
    ready for a moment, is stopping, and they wait for the next start."""
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted = []
    commands = EngineCommands(model, posted.append)
    commands.start()
    engine_now(model, EngineState.READY, model.latest_start_id)
    commands.stop()
    conversation = model.new_conversation()
    request = commands.ask(conversation.conversation_id, "Still there?", SamplingSettings())
    assert not [c for c in posted if isinstance(c, SubmitAll)] and conversation.messages[-1].status == "waiting"
    engine_now(model, EngineState.STOPPED, model.latest_start_id, "Engine stopped.")
    assert waiting_note(model.engine, False).startswith("not sent yet: the engine is stopped")
    commands.start()
    engine_now(model, EngineState.READY, model.latest_start_id)
    [sent] = [c for c in posted if isinstance(c, SubmitAll)]
    assert [r.request_id for r in sent.requests] == [request.request_id]


def test_a_trial_past_its_limits_fails_with_its_requests_aborted_and_the_search_goes_on(tmp_path):
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted, clock = [], Clock()
    run = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    heard = []
    run.trial_finished.connect(heard.append)
    run.start(small_spec(max_trials=2, trial_overrun_s=30.0, time_budget_s=7200))
    start_0 = posted[-1]
    assert run.trial_limits().start_s == START_LIMIT_FLOOR_S
    clock.now += START_LIMIT_FLOOR_S + 1
    run.tick()  # trial 0's engine never became ready
    assert heard[-2].number == 0 and heard[-2].state == "failed", heard
    assert heard[-2].error.startswith(f"The engine did not start within {START_LIMIT_FLOOR_S:.0f} s (4× the longest")
    start_1 = posted[-1]
    assert isinstance(start_1, StartEngine) and start_1.start_id > start_0.start_id
    assert heard[-1].number == 1 and heard[-1].state == "running"  # the search goes on
    engine_now(model, EngineState.READY, start_1.start_id)
    scheduled = posted[-1]
    assert isinstance(scheduled, SubmitScheduled) and len(scheduled.requests) == 4
    last_arrival = max(scheduled.offsets_s)
    clock.now += last_arrival + 29
    run.tick()
    assert run.current is not None and heard[-1].state == "running"  # within the limit
    clock.now += 2
    run.tick()
    aborted = [c.request_id for c in posted if isinstance(c, Abort)]
    assert aborted == [r.request_id for r in scheduled.requests]
    assert heard[-1].number == 1 and heard[-1].state == "failed"
    assert heard[-1].error == ("4 of 4 requests were still running 31 s after the workload's last arrival "
                               "(the limit: 30 s, as the search sets): they were aborted")


def test_a_trial_runs_as_vllm_serve_would_its_open_batch_limits_at_serves_defaults_not_an_llmengines():
    """The exported command is `vllm serve`: a trial's engine takes the batch limits it leaves open from
    `vllm serve`'s usage context (8,192 tokens and 1,024 sequences a step on an H200 with vLLM 0.32, where an
    LLMEngine takes 2,048 and 128), so trial 0 is `vllm serve` with no flags; the user's own engine keeps an
    LLMEngine's."""
    from vllm.usage.usage_lib import UsageContext

    from workbench.engine.spec import SERVE_CONTEXT
    from workbench.engine.vllm_plugin.engine_args import usage_context
    from workbench.tune.trial_config import trial_config

    base = EngineConfig(model="demo", max_model_len=512, scheduling_policy="priority")
    config = trial_config(base, default_space("0.32.0", "cpu"), {})
    assert config.usage_context == SERVE_CONTEXT and config.scheduling_policy is None
    assert "usage_context" not in config.engine_kwargs(on_cpu=True)  # not an engine argument
    assert config.engine_kwargs(on_cpu=True)["max_num_seqs"] is None  # left to vLLM
    assert usage_context(config.usage_context) is UsageContext.OPENAI_API_SERVER
    assert usage_context(base.usage_context) is UsageContext.ENGINE_CONTEXT


def test_the_gpu_space_offers_fp8_weights_unticked_and_a_trial_sets_them_only_when_chosen():
    """fp8 weights change the model's outputs: offered on CUDA, off until the user ticks them (then each
    trial's greedy outputs are compared with the defaults'); "none" leaves vLLM's default, the model's own."""
    from workbench.tune.trial_config import trial_config

    space = default_space("0.26.0", "cuda")
    quantization = space.parameter("quantization")
    assert quantization.choices == ("none", "fp8") and quantization.changes_outputs and not quantization.enabled
    assert default_space("0.32.0", "cpu").parameter("quantization") is None  # vLLM's CPU build has no fp8 weights
    ticked = space.with_enabled("quantization", True)
    assert ticked.changes_outputs
    base = EngineConfig(model="demo", max_model_len=512)
    assert trial_config(base, ticked, {"quantization": "fp8"}).option("quantization") == "fp8"
    assert trial_config(base, ticked, {"quantization": "none"}).option("quantization") is None
    assert trial_config(base.with_changes([("quantization", "fp8")]), ticked, {}).option("quantization") is None


def test_the_gpu_space_searches_vllms_optimization_level_and_a_level_vllm_lacks_is_refused_before_the_search():
    """The issue's "compilation level": vLLM's -O (``optimization_level``), searched on CUDA from 0 (no compilation,
    no CUDA graphs) to 2 (its default); a level its OptimizationLevel lacks is refused as a preset's value is."""
    from workbench.presets.machine import this_machine
    from workbench.tune import outputs
    from workbench.tune.trial_config import space_problems, trial_config

    space = default_space("0.26.0", "cuda")
    level = space.parameter("optimization_level")
    assert level.choices == (0, 1, 2) and level.enabled and not level.changes_outputs
    assert default_space("0.32.0", "cpu").parameter("optimization_level") is None
    config = trial_config(EngineConfig(model="demo", max_model_len=512), space, {"optimization_level": 1})
    assert config.engine_kwargs(on_cpu=False)["optimization_level"] == 1
    assert "--optimization-level 1" in outputs.serve_line(config, on_cpu=False)
    wrong = SearchSpace((SearchParameter("optimization_level", "choice", choices=(1, 7)),))
    problems = space_problems(wrong, this_machine(), None)
    assert len(problems) == 1 and "engine.optimization_level = 7 is not a valid level; valid: 0, 1, 2, 3." in problems[0]


def test_a_search_pauses_before_a_trial_that_would_end_past_its_deadline_and_resumes_there(tmp_path):
    """``bench tune --pause-after-s``: a device call's limit. No trial begins that the search's own figures say
    would end after the deadline; the search is left open to resume, its elapsed time kept."""
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted, clock = [], Clock()
    run = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    ended = []
    run.finished.connect(lambda verdict, message: ended.append((verdict, message)))
    run.last_start_s = 150.0  # an engine start takes 150 s here
    run.pause_at_s = clock.now + START_LIMIT_FLOOR_S + 100
    run.start(small_spec(name="paused", max_trials=3, time_budget_s=7200))
    assert run.current is not None and run.running_number == 0  # it would end in time: it begins
    clock.now += START_LIMIT_FLOOR_S + 1
    run.tick()  # trial 0's engine never became ready: it fails, and another start would end past the deadline
    assert ended == [(None, "Paused before the next trial, which would not end in time: 1 trial and 0 of 6 reruns "
                            "kept; resume 'paused' to go on.")]
    assert run.paused and not run.running and run.resumable() == ["paused"]
    assert not [c for c in posted if isinstance(c, StartEngine) and c.start_id > posted[0].start_id]
    assert run.study.study.user_attrs["elapsed_s"] == pytest.approx(START_LIMIT_FLOOR_S + 1)

    again = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    with pytest.raises(TuneRefused, match="must be positive"):
        again.resume("paused", time_budget_s=0)
    again.resume("paused", time_budget_s=9000, max_trials=5)  # carried further than it was asked at first
    assert [(t.number, t.state) for t in again.trials()] == [(0, "failed")]
    assert again.running_number == 1 and isinstance(posted[-1], StartEngine) and not again.paused
    stored = SearchStudy.open(tmp_path / "tune", "paused").spec
    assert (stored.time_budget_s, stored.max_trials, stored.name) == (9000, 5, "paused")


def test_the_time_left_is_the_trials_asked_for_and_the_reruns_where_they_end_before_the_budget(tmp_path):
    """Eight trials asked for within two hours: the search ends after them, not at the budget's end. Until a
    trial completes, each is estimated at an engine start's time."""
    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted, clock = [], Clock()
    run = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    run.last_start_s = 100.0  # an engine start takes 100 s here
    run.start(small_spec(name="asked for", max_trials=8, repeats=3, time_budget_s=7200))
    assert run.running_number == 0
    progress = run.progress()
    assert progress.time_left_s == pytest.approx(8 * 100 + 6 * 100)  # not 7200 s and the reruns
    assert (progress.num_trials_planned, progress.num_reruns_done, progress.num_reruns_planned) == (8, 0, 6)
    clock.now += 30  # trial 0 is 30 s in
    assert run.progress().time_left_s == pytest.approx(1400 - 30)
    run.stop()

    budget = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    budget.last_start_s = 100.0
    budget.start(small_spec(name="within the budget", max_trials=None, repeats=3, time_budget_s=7200))
    clock.now += 30
    assert budget.progress().time_left_s == pytest.approx(7200 - 30 + 6 * 100)  # the budget ends it
    budget.stop()


def test_chunked_prefill_is_not_sampled_off_where_the_batched_tokens_sampled_need_it(tmp_path):
    """The H100 search of 2026-12-05: TPE, never told that chunked prefill off with fewer batched tokens than
    max_model_len is refused, sampled that combination 1,208 times in a row. It is no longer sampled: below
    max_model_len, chunked prefill is left at vLLM's default (on)."""
    from optuna.trial import TrialState

    space = SearchSpace((SearchParameter("max_num_batched_tokens", "int", 128, 2048, log=True),
                         SearchParameter("enable_chunked_prefill", "bool")))
    study = SearchStudy.create(tmp_path / "tune", small_spec(space=space, seed=7))
    asked = []
    for _ in range(40):
        trial, params = study.ask(max_model_len=512)
        asked.append(params)
        study.study.tell(trial, state=TrialState.PRUNED if params.get("enable_chunked_prefill") is False
                         else None, values=None if params.get("enable_chunked_prefill") is False else 1.0)
    searched = asked[1:]  # trial 0: vLLM's defaults
    below = [p for p in searched if p["max_num_batched_tokens"] < 512]
    assert below and all("enable_chunked_prefill" not in p for p in below), below
    above = [p for p in searched if p["max_num_batched_tokens"] >= 512]
    assert above and all("enable_chunked_prefill" in p for p in above), above


def test_settings_refused_before_their_start_are_told_as_pruned_count_as_no_trial_and_a_run_of_them_ends_the_search(
        tmp_path, monkeypatch):
    """A space where every sampled setting is refused (fewer batched tokens than sequences): each refusal is
    told to Optuna as PRUNED (its TPE ranks them below every measured trial; it ignores FAIL), none counts
    against the trials asked for, and 50 in a row end the search's trials, said with the cause."""
    from optuna.trial import TrialState

    from workbench.tune import run as run_module
    from workbench.tune.run import REFUSED_IN_A_ROW_LIMIT

    monkeypatch.setattr(run_module, "REFUSALS_SLICE_S", 0.0)  # one refusal a slice: each tick asks once

    model = AppModel(EngineConfig(model="demo", max_model_len=512))
    posted, clock = [], Clock()
    run = TuneRun(model, EngineCommands(model, posted.append), tmp_path / "tune", clock=clock)
    ended, heard = [], []
    run.finished.connect(lambda verdict, message: ended.append((verdict, message)))
    run.trial_finished.connect(heard.append)
    space = SearchSpace((SearchParameter("max_num_seqs", "int", 64, 128),
                         SearchParameter("max_num_batched_tokens", "int", 32, 48)))
    run.start(small_spec(name="refusals", space=space, max_trials=3, time_budget_s=7200))
    clock.now += START_LIMIT_FLOOR_S + 1
    run.tick()  # trial 0 (the defaults) never started: a failure of its own, then the sampled ones are refused
    ticks = 1
    while not ended:  # in slices of the thread's time, the rest at each next tick (the window's events between)
        assert run.running and ticks <= REFUSED_IN_A_ROW_LIMIT, "more asks than refusals"
        run.tick()
        ticks += 1
    assert ticks == REFUSED_IN_A_ROW_LIMIT  # one refusal a tick, not 50 asks of Optuna in one go, which the window would wait on
    refused = [r for r in heard if r.refused]
    assert len(refused) == REFUSED_IN_A_ROW_LIMIT and all(r.state == "failed" for r in refused)
    assert refused[0].error.startswith("max_num_batched_tokens ") and "below max_num_seqs" in refused[0].error
    states = {t.number: t.state for t in run.study.study.get_trials(deepcopy=False)}
    assert {states[r.number] for r in refused} == {TrialState.PRUNED} and states[0] == TrialState.PRUNED
    assert not [c for c in posted if isinstance(c, StartEngine) and c.start_id > posted[0].start_id]
    assert ended[0][0] is None
    assert ended[0][1].startswith("No trial completed"), ended
    assert f"the last {REFUSED_IN_A_ROW_LIMIT} settings sampled were all refused before their start" in ended[0][1]
    assert run.progress().num_trials_done == 1  # the refusals ran nothing
    assert [r.refused for r in SearchStudy.open(tmp_path / "tune", "refusals").results()].count(True) == \
        REFUSED_IN_A_ROW_LIMIT


def test_the_command_line_log_shows_each_engine_start_once_and_each_rerun_as_it_is_kept(search, capsys):
    from workbench.bench.tune_cli import _progress_lines
    from workbench.tune.values import TuneProgress

    run, _ = search
    run.start(small_spec(name="log", goal=Goal(kind="goodput", ttft_p99_limit_s=2.0, itl_p99_limit_ms=50.0)))
    capsys.readouterr()
    show = _progress_lines(run)
    for text in ["Trial 0: starting the engine"] * 3 + ["Trial 0: 1 of 4 requests done"] * 3:
        show(TuneProgress(phase_text=text))
    rerun = "Verdict: defaults, run 1 of 3: 4 of 4 requests done"
    show(TuneProgress(phase_text=rerun, phase="verdict", elapsed_s=90))
    run.study.keep_verdict_run({"role": "defaults", "value": 0.0, "error": ""})
    show(TuneProgress(phase_text=rerun, phase="verdict", elapsed_s=95))
    show(TuneProgress(phase_text=rerun, phase="verdict", elapsed_s=95.2))
    run.study.keep_verdict_run({"role": "best", "value": None, "error": "the engine died"})
    show(TuneProgress(phase_text="finished", phase="finished", elapsed_s=180))
    assert capsys.readouterr().out.splitlines() == [
        "  Trial 0: starting the engine",
        "  Rerun 1 of 6, defaults: 0.000 goodput tok/s (95 s in)",
        "  Rerun 2 of 6, best: failed: the engine died (180 s in)"]


def ended_search(folder, name: str, base: EngineConfig, verdict_too: bool = True):
    """A search kept as the window keeps one: vLLM's defaults, then ``max_num_seqs=24`` measured better, the
    two rerun once each; ended with its verdict, or stopped before it."""
    spec = small_spec(name=name, repeats=1, space=SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64),)))
    study = SearchStudy.create(folder, spec, base)
    trial, _ = study.ask()
    study.tell_complete(trial, TrialResult(0, {}, "complete", TrialFigures(100.0, ttft_p99_s=0.2, num_requests_done=4),
                                           goal_value=100.0))
    study.study.enqueue_trial({"max_num_seqs": 24})
    trial, params = study.ask()
    assert params == {"max_num_seqs": 24}
    study.tell_complete(trial, TrialResult(1, params, "complete", TrialFigures(130.0, ttft_p99_s=0.3,
                                                                               num_requests_done=4), goal_value=130.0))
    if not verdict_too:
        study.end("stopped")
        return None
    runs = [{"role": "defaults", "value": 100.0, "error": ""}, {"role": "best", "value": 125.0, "error": ""}]
    for run in runs:
        study.keep_verdict_run(run)
    verdict = make_verdict(trial_result_of(study, 1), runs, spec.goal)
    study.end("verdict", asdict(verdict))
    return verdict


def trial_result_of(study, number):
    return next(r for r in study.results() if r.number == number)


def test_an_ended_search_opens_as_it_ended_on_the_model_it_ran_on_and_starts_nothing(search, tmp_path, monkeypatch):
    run, posted = search
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    ran_on = EngineConfig(model="/models/other", max_model_len=1024)
    verdict = ended_search(run.folder, "tuned before", ran_on)
    ended_search(run.folder, "stopped early", ran_on, verdict_too=False)
    assert run.past() == ["stopped early", "tuned before"] and run.resumable() == []  # newest first
    ended, progress = [], []
    run.finished.connect(lambda v, message: ended.append((v, message)))
    run.progress_changed.connect(progress.append)
    stored = run.read_stored("tuned before")  # the window reads it on a worker thread
    assert stored.ended == "verdict" and not ended
    run.open("tuned before", stored)
    assert [(t.number, t.state) for t in run.trials()] == [(0, "complete"), (1, "complete")]
    [(shown, message)] = ended
    assert message == "" and shown.best_number == 1 and shown.ratio_median == pytest.approx(1.25)
    [as_ended] = progress  # its best and Pareto front, for the plot and the table
    assert as_ended.best.number == 1 and as_ended.pareto_numbers == (0, 1) and as_ended.phase == "finished"
    assert as_ended.time_left_s == 0.0
    assert shown.text == verdict.text and not run.running
    line = run.serve_line()  # on the configuration the search ran on, not the engine's now
    assert line.startswith("vllm serve /models/other") and "--max-model-len 1024" in line, line
    assert "--max-num-seqs 24" in line, line
    preset = run.apply_as_preset("from the past")
    assert preset.endswith(".toml") and "tuned before" in open(preset).read()
    assert posted == []  # nothing went to the engine
    run.open("stopped early")  # read here
    assert ended[-1] == (None, "Stopped before its verdict: 2 trials kept.")
    with pytest.raises(KeyError):  # gone since it was listed: the pane says so
        run.open("never kept")


def test_a_search_resumes_only_on_the_model_it_ran_on(search):
    run, posted = search
    spec = small_spec(name="elsewhere", space=SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64),)))
    SearchStudy.create(run.folder, spec, EngineConfig(model="/models/other", max_model_len=512))
    assert run.resumable() == ["elsewhere"]
    with pytest.raises(TuneRefused) as refused:
        run.resume("elsewhere")
    assert list(refused.value.messages) == [
        "The search ran on /models/other, and the engine now runs demo: trials on another model would not "
        "compare with its trials so far. Start /models/other again, then resume."]
    assert posted == [] and not run.running and run.resumable() == ["elsewhere"]


def test_a_model_folder_moved_or_written_again_is_the_same_model_to_a_search(search, tmp_path):
    run, posted = search
    first, moved, other = (tmp_path / name for name in ("shape-a1b2", "shape-c3d4", "other"))
    for folder, layers in ((first, 28), (moved, 28), (other, 24)):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"num_hidden_layers": layers, "_name_or_path": str(folder),
                                                        "transformers_version": "5.17"}))
    spec = small_spec(name="on a shape", space=SearchSpace((SearchParameter("max_num_seqs", "int", 4, 64),)))
    study = SearchStudy.create(run.folder, spec, EngineConfig(model=str(first), max_model_len=512))
    assert study.runs_on(str(moved)) and study.runs_on(str(first))  # the same config.json: the same model
    assert not study.runs_on(str(other)) and not study.runs_on("demo")
