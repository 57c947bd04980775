"""The live plots and the memory panel laid out for a small window, without an engine: the plots' grid
takes one column when narrow and more when wide, each view box keeps a readable height (the canvas
asks for it, so a scroll area scrolls instead of squashing), the time axis is labelled, legends and
titles are at the window's font size, and the memory panel's figures are a table's rows."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication, QScrollArea, QVBoxLayout, QWidget

from workbench.engine.backend import WorkerMemory
from workbench.engine.ring_buffer import Series
from workbench.engine.stats import COLUMNS, StatsSeries, StatsTotals
from workbench.telemetry.gpu_memory import GpuMemory
from workbench.telemetry.memory_service import MEMORY_COLUMNS, MemoryReading, MemoryState, ProcessMemory
from workbench.ui.memory_panel import MemoryPanel, describe_memory
from workbench.ui.plot_grid import MIN_VIEW_HEIGHT_PX, columns_for, legend_columns
from workbench.ui.stats_plots import PLOTS, StatsPlotsView

GIB = 1 << 30
NO_NVML = "NVML is not available: OSError: libnvidia-ml.so.1: cannot open shared object file"


def stats_series(num_points: int = 200) -> StatsSeries:
    columns = {name: np.linspace(0, 50, num_points) for name in COLUMNS}
    columns["t"] = 0.25 * np.arange(num_points)
    return StatsSeries(Series(num_points, MappingProxyType(columns)), StatsTotals(generation_tokens=1234))


def reading(on_gpu: bool, with_engine: bool = True) -> MemoryReading:
    worker = WorkerMemory(4242, "cuda:0" if on_gpu else "cpu", 0 if on_gpu else None, 3 * GIB, "parameters", 20 * GIB)
    processes = (ProcessMemory(4242, "engine core", 2 * GIB, 26 * GIB if on_gpu else None, worker),
                 ProcessMemory(4243, "engine client", GIB, None, None)) if with_engine else ()
    gpus = (GpuMemory(0, "NVIDIA H200", 30 * GIB, 140 * GIB),) if on_gpu else ()
    return MemoryReading(10.0, None if on_gpu else NO_NVML, gpus, processes, 20 * GIB if with_engine else 0, 6272)


def memory_state(latest: MemoryReading, num_points: int = 20) -> MemoryState:
    columns = {name: np.full(num_points, float(GIB)) for name in MEMORY_COLUMNS}
    columns["t"] = np.arange(num_points, dtype=float)
    return MemoryState(latest, Series(num_points, MappingProxyType(columns)))


def stacked(qtbot, width: int, height: int = 600) -> tuple[QScrollArea, StatsPlotsView, MemoryPanel]:
    """The plots over the memory panel in a vertical scroll area, as the window holds them."""
    plots, memory = StatsPlotsView(0.0), MemoryPanel(0.0)
    inner = QWidget()
    layout = QVBoxLayout(inner)
    layout.addWidget(plots)
    layout.addWidget(memory)
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(inner)
    qtbot.addWidget(area)
    area.resize(width, height)
    with qtbot.waitExposed(area):
        area.show()
    return area, plots, memory


def grid_columns(plots: StatsPlotsView) -> int:
    """How many columns the plots lie in, read from where they are drawn."""
    return len({round(plot.pos().x()) for plot in plots.plots.values()})


@pytest.mark.parametrize(("width", "columns"), [(500, 1), (620, 2), (950, 2), (1500, 3)])
def test_the_plots_take_the_columns_their_width_holds_each_view_at_its_least_height(qtbot, width, columns):
    area, plots, memory = stacked(qtbot, width)
    assert plots.show_stats(stats_series())
    # the scroll area's frame, its scroll bar and the layout's margins take some of the width
    qtbot.waitUntil(lambda: grid_columns(plots) == columns == plots.grid.columns == columns_for(plots.width()))
    for name, plot in plots.plots.items():
        assert plot.getViewBox().height() >= MIN_VIEW_HEIGHT_PX - 0.5, name
    assert memory.plot.getViewBox().height() >= MIN_VIEW_HEIGHT_PX - 0.5
    assert area.horizontalScrollBar().maximum() == 0, "the plots asked for more width than they were given"


def test_a_narrow_region_scrolls_down_and_never_sideways(qtbot):
    area, plots, memory = stacked(qtbot, 320, 500)
    qtbot.waitUntil(lambda: plots.grid.columns == 1)
    assert plots.minimumSizeHint().width() <= 320 and memory.minimumSizeHint().width() <= 320
    assert plots.minimumSizeHint().height() >= len(PLOTS) * MIN_VIEW_HEIGHT_PX
    assert area.verticalScrollBar().maximum() > 0 and area.horizontalScrollBar().maximum() == 0


def test_the_grid_is_laid_out_again_only_when_its_columns_change(qtbot):
    area, plots, _ = stacked(qtbot, 950)
    qtbot.waitUntil(lambda: plots.grid.columns == 2)
    assert not plots.grid.fit(900) and not plots.grid.fit(1000)  # still two columns: nothing laid out
    assert plots.grid.fit(500) and plots.grid.columns == 1
    assert plots.minimumHeight() == 0 and plots.graphics.minimumHeight() >= len(PLOTS) * MIN_VIEW_HEIGHT_PX


def test_every_time_axis_is_labelled_and_every_text_is_at_the_window_font_size(qtbot):
    _, plots, memory = stacked(qtbot, 950)
    font_pt = QApplication.font().pointSizeF()
    for name, plot in [*plots.plots.items(), ("memory", memory.plot)]:
        axis = plot.getAxis("bottom")
        assert axis.labelText == "s since the window opened", name
        assert plot.legend.items, name
        for _, label in plot.legend.items:
            assert float(label.opts["size"].removesuffix("pt")) >= font_pt, (name, label.opts)
        assert float(plot.titleLabel.opts["size"].removesuffix("pt")) >= font_pt, name


def test_a_time_axis_too_narrow_for_its_words_says_its_unit_whole_and_widened_says_them_again(qtbot):
    """On half a laptop screen the plots are about 130 px wide: "s since the window opened" was cut off at
    "s since the window opene". Now such an axis says "s" (its tooltip says the whole); made wide, the words."""
    area, plots, memory = stacked(qtbot, 280)
    axis = plots.plots["tokens"].getAxis("bottom")
    qtbot.waitUntil(lambda: axis.labelText == "s")
    assert "s since the window opened" in axis.toolTip()
    area.resize(950, 600)
    qtbot.waitUntil(lambda: axis.labelText == "s since the window opened")
    assert memory.plot.getAxis("bottom").labelText == "s since the window opened"


def test_a_legend_lies_in_the_columns_its_plot_holds():
    assert legend_columns(900, 2) == 2 and legend_columns(250, 2) == 1
    assert legend_columns(450, 4) == 2 and legend_columns(900, 4) == 4
    assert legend_columns(600, 5) == 3 and legend_columns(320, 5) == 1


def test_memory_rows_without_nvml_say_why_above_the_host_memory():
    table = describe_memory(reading(on_gpu=False))
    assert table.note.startswith(f"No GPU figures: {NO_NVML}.")
    assert table.texts() == [("engine process", "host memory", "weights", "KV cache", "rest"),
                             ("pid 4242 engine core", "2.00 GiB", "3.00 GiB", "20.00 GiB", ""),
                             ("pid 4243 engine client", "1.00 GiB", "", "", ""),
                             ("KV space", "20.00 GiB", "6,272 blocks")]
    assert [row.heading for row in table.rows] == [True, False, False, False]
    idle = describe_memory(reading(on_gpu=False, with_engine=False))
    assert "No engine running." in idle.note and idle.rows == ()


def test_memory_rows_on_a_gpu_give_total_used_free_and_vllms_split():
    table = describe_memory(reading(on_gpu=True))
    assert table.note == ""
    assert table.texts() == [("GPU", "total", "used", "free"),
                             ("GPU 0 NVIDIA H200", "140.00 GiB", "30.00 GiB", "110.00 GiB"),
                             ("engine process", "GPU memory", "weights", "KV cache", "rest"),
                             ("pid 4242 engine core", "26.00 GiB", "3.00 GiB", "20.00 GiB", "3.00 GiB"),
                             ("pid 4243 engine client", "n/a", "", "", ""),
                             ("KV space", "20.00 GiB", "6,272 blocks")]


def test_the_memory_table_keeps_its_height_while_figures_change(qtbot):
    panel = MemoryPanel(0.0)
    qtbot.addWidget(panel)
    panel.resize(600, 500)
    panel.show()
    assert panel.show_memory(memory_state(reading(on_gpu=True)))
    table = panel.table
    assert table.isVisible() and table.rowCount() == 6
    assert table.texts()[3] == ("pid 4242 engine core", "26.00 GiB", "3.00 GiB", "20.00 GiB", "3.00 GiB")
    height = table.height()
    later = reading(on_gpu=True)
    later = MemoryReading(12.0, None, (GpuMemory(0, "NVIDIA H200", 31 * GIB, 140 * GIB),), later.processes,
                          later.kv_cache_bytes, later.num_blocks)
    assert panel.show_memory(memory_state(later, 21))
    assert table.texts()[1][2] == "31.00 GiB" and table.height() == height == table.minimumHeight()
    assert table.sizePolicy().horizontalPolicy() == table.sizePolicy().Policy.Ignored


def test_engines_ending_in_a_row_leave_one_label_before_the_totals(qtbot):
    """A search restarts the engine for each trial, often before its first statistics: the line above the plots
    names the last end once, not each end in a row ("restarted — restarted — …")."""
    from workbench.engine.events import EngineState
    from workbench.model.engine_status import EngineStatus

    plots = StatsPlotsView(0.0)
    qtbot.addWidget(plots)
    for at in (1.0, 2.0, 3.0):
        plots.mark_engine_end(EngineStatus(EngineState.STARTING, "starting"), at)
    assert plots.totals.text() == "restarted — No statistics yet."
    plots.mark_engine_end(EngineStatus(EngineState.STOPPED, "stopped"), 4.0)
    assert plots.totals.text() == "engine stopped — No statistics yet."
