"""Connect to server, as a person fills it in: plain http to another machine asks first, turning
certificate checks off shows a warning, a bad address is named, recent servers come back without key."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from workbench.remote.spec import ServerSpec
from workbench.ui.server_dialogs import TLS_WARNING, ConnectDialog


def test_plain_http_elsewhere_asks_first_and_no_keeps_the_dialog_open(qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.No)
    dialog = ConnectDialog(recent=[])
    qtbot.addWidget(dialog)
    dialog.url.setCurrentText("http://gpu-box.example:8000")
    dialog.key.setText("sk-123")
    dialog.accept()
    assert asked and "unencrypted" in asked[0] and dialog.spec() is None and dialog.result() == 0
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Yes)
    dialog.accept()
    assert dialog.spec() == ServerSpec("http://gpu-box.example:8000", api_key="sk-123")


def test_loopback_needs_no_question_and_tls_off_warns(qtbot, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: (_ for _ in ()).throw(AssertionError("asked")))
    dialog = ConnectDialog(recent=[ServerSpec("https://box:8443", verify_tls=False)])
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.url.currentText() == "https://box:8443" and not dialog.verify.isChecked()
    assert dialog.key.text() == "" and dialog.tls_warning.isVisible()
    dialog.verify.setChecked(True)
    assert not dialog.tls_warning.isVisible()
    dialog.verify.setChecked(False)
    assert dialog.tls_warning.isVisible() and dialog.tls_warning.text() == TLS_WARNING
    dialog.url.setCurrentText("http://127.0.0.1:8000")
    dialog.accept()
    assert dialog.spec().verify_tls is False and dialog.spec().api_root == "http://127.0.0.1:8000"


def test_a_bad_address_or_events_endpoint_is_named(qtbot):
    dialog = ConnectDialog(recent=[])
    qtbot.addWidget(dialog)
    dialog.url.setCurrentText("127.0.0.1:8000")
    spec, problem = dialog.spec_or_problem()
    assert spec is None and "http://host:port" in problem
    dialog.url.setCurrentText("http://127.0.0.1:8000")
    dialog.kv_events.setText("127.0.0.1:5557")
    spec, problem = dialog.spec_or_problem()
    assert spec is None and "tcp://host:port" in problem
