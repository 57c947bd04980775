"""The window at a laptop's 1280×720 and a desktop's 1920×1080 (offscreen, the app's own widgets, a
synthetic block pool in the heatmap): two regions, the heatmap at least 300×300 with square cells,
the transcript most of the work region, and no panel of the engine region needing a horizontal
scroll bar; either region can be given the whole window and handed back."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractScrollArea

from workbench.bench.heatmap_cost import synthetic_snapshot
from workbench.ui.plot_grid import MIN_VIEW_HEIGHT_PX

SIZES = [(1280, 720), (1920, 1080)]
MIN_HEATMAP_PX = 300


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path))
    return tmp_path


def open_window(qtbot, size):
    from workbench.app import build_window, demo_engine_config
    from workbench.ui.pg_setup import configure_pyqtgraph

    configure_pyqtgraph()  # as the app does: row-major images

    window, _ = build_window(demo_engine_config(), start_engine=False, keep=False, client="thread")
    qtbot.addWidget(window)
    window.resize(*size)
    with qtbot.waitActive(window):  # the View menu's keys go to the active window
        window.show()
        window.activateWindow()
    qtbot.waitUntil(lambda: window.regions.width() > 0.9 * size[0], timeout=5_000)
    return window


def horizontal_bars(widget) -> list[str]:
    """The scroll areas under ``widget`` that are showing a horizontal scroll bar."""
    return [area.objectName() or type(area).__name__ for area in widget.findChildren(QAbstractScrollArea)
            if area.isVisibleTo(widget) and area.horizontalScrollBar().isVisible()]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_regions_share_the_window_and_the_heatmap_is_legible(config_dir, qtbot, size):
    window = open_window(qtbot, size)
    work, engine = window.regions.sizes()
    assert min(work, engine) > 0.4 * size[0], window.regions.sizes()
    heatmap = window.heatmap
    heatmap.show_snapshot(synthetic_snapshot(65_536, seed=2))
    qtbot.waitUntil(lambda: heatmap.snapshot is not None)
    plot = heatmap.plot
    assert plot.width() >= MIN_HEATMAP_PX and plot.height() >= MIN_HEATMAP_PX, plot.size()
    box = plot.getViewBox()
    shown = box.viewRect()
    across, down = box.size().width() / shown.width(), box.size().height() / shown.height()
    assert across == pytest.approx(down, rel=1e-3), "square cells"
    _, rows, columns = heatmap.grid
    assert box.size().width() - columns * across < across and box.size().height() - rows * down < down, \
        "the grid fills the view: less than a cell left over"
    assert window.engine_region.currentWidget() is window.engine_region.splitter, "the engine tab is in front"
    assert window.chat.stack.width() >= 0.7 * window.panes.width(), "the transcript has most of the work region"
    for name, plot in window.plots.plots.items():  # the plots scroll down rather than squash into slivers
        assert plot.getViewBox().height() >= MIN_VIEW_HEIGHT_PX - 0.5, name
    assert window.memory.plot.getViewBox().height() >= MIN_VIEW_HEIGHT_PX - 0.5
    window.close()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_panel_of_the_engine_region_needs_a_horizontal_scroll_bar(config_dir, qtbot, size):
    window = open_window(qtbot, size)
    window.presets.choose("balanced")  # a preset's table, its values and the capacity plan shown
    region = window.engine_region
    for index in range(region.count()):
        region.setCurrentIndex(index)
        qtbot.waitUntil(lambda: region.currentWidget().isVisible())
        qtbot.wait(50)  # the tab's layout runs on the next turn of the event loop
        assert horizontal_bars(region.currentWidget()) == [], region.tabText(index)
    assert horizontal_bars(window.panes) == [], "the chat"
    window.panes.setCurrentWidget(window.batch)
    qtbot.waitUntil(window.batch.isVisible)
    settings = window.batch.settings
    assert settings.parentWidget().width() >= settings.minimumSizeHint().width(), "the batch settings are not cut"
    window.close()


@pytest.mark.parametrize("size", [(683, 768), (643, 480)], ids=["half-a-laptop", "least"])
def test_a_narrow_window_cuts_nothing_of_the_plots_off_unseen(config_dir, qtbot, size):
    """The window on half a 1366-pixel screen: the bar above the plots (Pause, Show all, Follow) fits the
    engine region; made narrower still (the window's least width), the plots scroll across instead of
    cutting their bar and axes off with no way to see them (the Follow button was cut in half)."""
    window = open_window(qtbot, size)
    qtbot.waitUntil(lambda: window.engine_region.width() > 0)
    area = window.engine_region.monitors
    qtbot.wait(50)  # the layout runs on the next turn of the event loop
    needed = area.widget().minimumSizeHint().width()
    if size == (683, 768):
        assert needed <= area.viewport().width(), (needed, area.viewport().width())
        bar = window.plots.follow
        assert bar.mapTo(area.viewport(), bar.rect().topRight()).x() < area.viewport().width()
    else:
        assert needed > area.viewport().width() and area.horizontalScrollBar().isVisible()
    window.close()


def test_a_key_gives_a_region_the_whole_window_and_takes_it_back(config_dir, qtbot):
    window = open_window(qtbot, SIZES[0])
    regions = window.regions
    before = regions.sizes()
    qtbot.keyClick(window, Qt.Key_2, Qt.ControlModifier)
    assert regions.whole_window is window.engine_region and not window.panes.isVisible()
    qtbot.waitUntil(lambda: window.heatmap.plot.width() > 0.9 * SIZES[0][0])
    qtbot.keyClick(window, Qt.Key_2, Qt.ControlModifier)  # again: both
    assert regions.whole_window is None and window.panes.isVisible()
    qtbot.keyClick(window, Qt.Key_1, Qt.ControlModifier)
    assert regions.whole_window is window.panes and not window.engine_region.isVisible()
    window.show_panel("Presets")  # a panel asked for: the engine region comes back to show it
    assert regions.whole_window is None and window.engine_region.currentWidget() is region_panel(window, "Presets")
    qtbot.keyClick(window, Qt.Key_0, Qt.ControlModifier)
    qtbot.waitUntil(lambda: abs(regions.sizes()[0] - before[0]) <= 2)
    window.close()


def region_panel(window, title):
    return window.engine_region.panels[title]


@pytest.mark.parametrize("size", [(683, 768), (1280, 720)], ids=["half-a-laptop", "laptop"])
def test_the_tune_tab_fits_the_window_it_opens_in(config_dir, qtbot, size):
    """Tools > Tune… on half a 1366-pixel screen: the tab had made the window 742 px wide (its buttons and
    form would not shrink), cutting the window's right edge off the screen. Now the window keeps its width,
    every button of the tab's rows is in sight, and the form fits without scrolling across (the search space's
    table may: its notes are in its cells' tooltips too)."""
    window = open_window(qtbot, size)
    window.tune.show_tab()
    pane = window.tune.pane
    qtbot.waitUntil(pane.isVisible)
    qtbot.wait(50)  # the layout runs on the next turn of the event loop
    assert window.width() == size[0]
    for key, button in (*pane.buttons.items(), ("setup", pane.setup_button)):
        if button.isVisible():
            right = button.mapTo(pane, button.rect().topRight()).x()
            assert right < pane.width(), (key, right, pane.width())
    assert set(horizontal_bars(pane)) <= {"tuneSpaceTable"}
    # both stored-search lists shown, each with a name of a search made by the clock: whole in the room left them
    for combo in (pane.resumable, pane.past):  # the one shown (searches other tests kept may be listed too)
        combo.addItem("tune-20261207-120143")
        combo.setCurrentIndex(combo.count() - 1)
        combo.show()
    qtbot.wait(50)
    assert window.width() == size[0]
    for combo in (pane.resumable, pane.past):
        assert combo.width() >= combo.fontMetrics().horizontalAdvance(combo.currentText()) + 30, combo.width()
    window.close()


def test_windows_of_their_own_open_within_the_screen(config_dir, qtbot, tmp_path):
    """File > Sessions… opened at 1200 × 860 and Model > Get a model… at 1100 × 760: on a 1366 × 768 laptop
    both ran off the foot of the screen, their buttons out of reach. Each now takes at most the share of the
    screen's free area the main window takes (the offscreen screen here is smaller than either)."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QWidget

    from workbench.ui.engine_log_view import EngineLogDialog
    from workbench.ui.sessions_view import SessionsView
    from workbench.ui.window_layout import SCREEN_SHARE, resize_within_screen

    free = QGuiApplication.primaryScreen().availableGeometry()
    assert free.height() < 860 and free.width() < 1200, "the screen must be smaller than the windows' own sizes"
    log = tmp_path / "engine.log"
    log.write_text("INFO a line\n")
    for window in (SessionsView(tmp_path / "workbench.db"), EngineLogDialog(str(log))):
        qtbot.addWidget(window)
        assert window.width() <= free.width() * SCREEN_SHARE and window.height() <= free.height() * SCREEN_SHARE, \
            (type(window).__name__, window.size())
    small = QWidget()
    qtbot.addWidget(small)
    resize_within_screen(small, 300, 200)  # what fits is given whole
    assert (small.width(), small.height()) == (300, 200)


def test_the_server_tab_s_headers_say_their_words_whole(config_dir, qtbot):
    """At 1280 × 720 the Server tab's figures table cut its headers at both ends ("enerated to", "preemptions"
    clipped): a header's words now wrap onto a second line the header has room for, each word whole."""
    window = open_window(qtbot, SIZES[0])
    region = window.engine_region
    region.setCurrentWidget(region_panel(window, "Server"))
    panel = window.server.panel
    qtbot.waitUntil(panel.isVisible)
    qtbot.wait(50)  # the layout runs on the next turn of the event loop
    header = panel.table.horizontalHeader()
    metrics = header.fontMetrics()
    assert header.height() >= 2 * metrics.lineSpacing()
    for column in range(header.count()):
        words = panel.table.horizontalHeaderItem(column).text().split()
        assert max(metrics.horizontalAdvance(word) for word in words) < header.sectionSize(column), words
    window.close()
