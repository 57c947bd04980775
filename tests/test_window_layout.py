"""The window's layout is kept between runs: size, splitter sizes and the engine region's tab come
back as the user left them; a first run, an older layout or an unreadable file fits the window to its
screen."""
from __future__ import annotations

import pytest

from workbench.ui import window_layout
from workbench.ui.window_layout import LAYOUT_VERSION, SCREEN_SHARE, layout_file, restore_layout


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path))
    return tmp_path


def open_window(qtbot):
    """The app's window with no engine and nothing stored (the layout is all this test reads)."""
    from workbench.app import build_window, demo_engine_config

    window, _ = build_window(demo_engine_config(), start_engine=False, keep=False, client="thread")
    window.remember_layout = True
    qtbot.addWidget(window)
    return window


def close_to(sizes, expected, slack_px=2):
    return len(sizes) == len(expected) and all(abs(a - b) <= slack_px for a, b in zip(sizes, expected))


def splitter(window, name):
    return window.findChild(window_layout.QSplitter, name)


def test_a_first_window_fits_the_screen_with_the_engine_tab_in_front_of_the_panels(config_dir, qtbot):
    window = open_window(qtbot)
    assert not restore_layout(window)
    free = window.screen().availableGeometry()
    assert window.width() == int(free.width() * SCREEN_SHARE) and window.height() == int(free.height() * SCREEN_SHARE)
    region = window.engine_region
    assert [region.tabText(i) for i in range(region.count())] == ["Engine", "Presets", "Server"]
    with qtbot.waitExposed(window):
        window.show()
    assert window.heatmap.isVisible() and not window.presets.isVisible(), "the engine's tab is the one in front"
    window.close()


def test_the_layout_comes_back_as_the_user_left_it(config_dir, qtbot):
    window = open_window(qtbot)
    restore_layout(window)
    with qtbot.waitExposed(window):
        window.show()
    window.resize(780, 700)  # within the offscreen screen's 800 pixels
    splitter(window, "engineSplitter").setSizes([150, 450])  # the heatmap short, the plots tall
    splitter(window, "regionsSplitter").setSizes([300, 700])  # the engine region wide
    window.show_panel("Presets")
    window.chat.open_drawer()  # the chat's settings drawer left open (it starts closed)
    engine_sizes = splitter(window, "engineSplitter").sizes()
    region_sizes = splitter(window, "regionsSplitter").sizes()
    window.close()
    assert layout_file().is_file()

    again = open_window(qtbot)
    assert restore_layout(again)
    with qtbot.waitExposed(again):
        again.show()
    assert again.size().toTuple() == (780, 700)
    assert again.presets.isVisible() and not again.heatmap.isVisible(), "the Presets tab in front, as left"
    assert close_to(splitter(again, "regionsSplitter").sizes(), region_sizes)
    assert splitter(again, "chatSplitter").sizes()[2] > 0 and again.chat.drawer_open()
    assert again.chat.drawer_button.isChecked(), "the button says the drawer is open"
    again.engine_region.show_engine()
    qtbot.waitUntil(again.heatmap.isVisible)
    assert close_to(splitter(again, "engineSplitter").sizes(), engine_sizes)
    again.close()


@pytest.mark.parametrize("content", [f"[General]\nversion={LAYOUT_VERSION - 1}\n", "\x00\xff not a settings file",
                                     f"[General]\nversion={LAYOUT_VERSION}\ngeometry=garbage\nstate=42\n"])
def test_an_older_or_unreadable_layout_fits_the_window_to_its_screen(config_dir, qtbot, content):
    layout_file().write_bytes(content.encode("latin-1"))
    window = open_window(qtbot)
    restore_layout(window)
    free = window.screen().availableGeometry()
    assert window.width() == int(free.width() * SCREEN_SHARE)
    assert window.engine_region.currentIndex() == 0
    window.close()


def test_the_window_fits_a_laptop_screen(config_dir, qtbot):
    """1280 × 720 free pixels: no pane holds the window wider (side forms scroll, the legend wraps)."""
    window = open_window(qtbot)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 720, hint
    window.close()
