"""The window's layout, kept between runs: its size and place, the sizes of its named splitters (the
two regions, the engine tab's heatmap and plots, the chat's and batch pane's columns) and the engine
region's tab in front, in ``window.ini`` in the user's config folder (Qt's own encodings of each). The
first run, or a layout saved by a version with another arrangement, fits the window to its screen
instead."""
from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QSplitter, QWidget

from workbench.paths import config_dir

LAYOUT_VERSION = 2  # raised when the arrangement changes: a layout saved before is then not applied
# 2: two regions (work | engine) in place of the columns and the presets' dock
SCREEN_SHARE = 0.92  # a first window takes this share of the screen's free area
DEFAULT_SIZE = (1400, 860)  # where the screen is unknown


def layout_file():
    return config_dir() / "window.ini"


def _settings() -> QSettings:
    return QSettings(str(layout_file()), QSettings.IniFormat)


def _splitters(window: QMainWindow) -> dict[str, QSplitter]:
    return {s.objectName(): s for s in window.findChildren(QSplitter) if s.objectName()}


def _saved_bytes(settings: QSettings, key: str) -> QByteArray:
    """What ``save_layout`` wrote under ``key``; empty (which Qt refuses to apply) for anything else."""
    value = settings.value(key)
    return value if isinstance(value, QByteArray) else QByteArray(value) if isinstance(value, bytes) else QByteArray()


def save_layout(window: QMainWindow) -> None:
    settings = _settings()
    settings.setValue("version", LAYOUT_VERSION)
    settings.setValue("geometry", window.saveGeometry())
    settings.setValue("state", window.saveState(LAYOUT_VERSION))
    for name, splitter in _splitters(window).items():
        settings.setValue(f"splitters/{name}", splitter.saveState())
    region = getattr(window, "engine_region", None)
    if region is not None:
        settings.setValue("engineTab", region.tabText(region.currentIndex()))
    settings.sync()


def restore_layout(window: QMainWindow) -> bool:
    """Applies the saved layout; True if there was one. A missing, older or unreadable one (Qt ignores
    what it cannot read) leaves the window fitted to its screen."""
    settings = _settings()
    if settings.value("version", type=int) != LAYOUT_VERSION:
        fit_to_screen(window)
        return False
    if not window.restoreGeometry(_saved_bytes(settings, "geometry")):
        fit_to_screen(window)
    window.restoreState(_saved_bytes(settings, "state"), LAYOUT_VERSION)
    for name, splitter in _splitters(window).items():
        splitter.restoreState(_saved_bytes(settings, f"splitters/{name}"))
    _restore_engine_tab(window, settings.value("engineTab"))
    window.layout_restored = True  # the first window's own split is not applied over the user's
    return True


def _restore_engine_tab(window: QMainWindow, title) -> None:
    region = getattr(window, "engine_region", None)
    if region is None or not isinstance(title, str):
        return
    for index in range(region.count()):
        if region.tabText(index) == title:
            region.setCurrentIndex(index)


def fit_to_screen(window: QMainWindow) -> None:
    screen = window.screen()
    if screen is None:
        window.resize(*DEFAULT_SIZE)
        return
    free = screen.availableGeometry()
    width, height = int(free.width() * SCREEN_SHARE), int(free.height() * SCREEN_SHARE)
    window.resize(width, height)
    window.move(free.x() + (free.width() - width) // 2, free.y() + (free.height() - height) // 2)


def resize_within_screen(window: QWidget, width: int, height: int) -> None:
    """Gives a window of its own (a dialog, the Sessions window) the size it wants, or SCREEN_SHARE of its
    screen's free area where that is less: a 1200 × 860 window ran off the foot of a 1366 × 768 laptop screen,
    its buttons out of reach."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        free = screen.availableGeometry()
        width = min(width, int(free.width() * SCREEN_SHARE))
        height = min(height, int(free.height() * SCREEN_SHARE))
    window.resize(width, height)
