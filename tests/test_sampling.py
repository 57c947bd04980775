"""One conversion from the workbench's sampling settings to vLLM's ``SamplingParams``."""
from __future__ import annotations

from workbench.engine.sampling import DEFAULT_SAMPLING, SamplingSettings
from workbench.engine.sampling_params import to_sampling_params


def test_settings_become_delta_sampling_params_capped_to_the_room_left():
    from vllm.sampling_params import RequestOutputKind

    settings = SamplingSettings(temperature=0.8, top_p=0.9, top_k=40, max_tokens=300, seed=7, ignore_eos=True)
    params = to_sampling_params(settings, max_tokens_cap=120, detokenize=False)
    assert (params.temperature, params.top_p, params.top_k, params.seed) == (0.8, 0.9, 40, 7)
    assert params.max_tokens == 120 and params.ignore_eos and not params.detokenize
    assert params.output_kind == RequestOutputKind.DELTA
    assert to_sampling_params(settings).max_tokens == 300  # no cap
    assert to_sampling_params(SamplingSettings(top_k=0)).top_k in (0, -1)  # off, in vLLM's words


def test_sampling_panel_starts_from_the_defaults(qtbot):
    from workbench.ui.sampling_panel import SamplingPanel

    panel = SamplingPanel()
    qtbot.addWidget(panel)
    assert panel.settings() == DEFAULT_SAMPLING
