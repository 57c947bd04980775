import os, sys, time, statistics
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication, QLabel
from PySide6.QtCore import QEventLoop, QTimer
app = QApplication([])
from workbench.model.conversations import ChatMessage, Conversation
from workbench.ui.chat_pane import TranscriptView, MessageView
import workbench.ui.chat_pane as cp

words = ("block cache prefix token engine paged attention request batch stream " * 12).split()
question = " ".join(words[:100])

def settle():
    loop = QEventLoop(); QTimer.singleShot(30, loop.quit); loop.exec()

def one(label, turns_before=0):
    times = []
    for i in range(12):
        conv = Conversation("c")
        for _ in range(turns_before):
            conv.messages += [ChatMessage("user", question), ChatMessage("assistant", question, status="done")]
        view = TranscriptView(conv); view.resize(700, 600); view.show(); view.sync(); settle()
        conv.messages += [ChatMessage("user", question), ChatMessage("assistant", "", status="streaming")]
        c0 = time.thread_time(); t0 = time.perf_counter()
        view.sync()
        t1 = time.perf_counter()
        app.processEvents(); app.processEvents()
        t2 = time.perf_counter(); c1 = time.thread_time()
        times.append(((t1 - t0) * 1e3, (t2 - t0) * 1e3, (c1 - c0) * 1e3))
        view.close(); view.deleteLater(); settle()
    print(label, turns_before, "sync ms %.2f, with layout+paint %.2f, cpu %.2f" % tuple(statistics.median(t[k] for t in times[3:]) for k in range(3)))

variant = sys.argv[1] if len(sys.argv) > 1 else "as is"
if variant == "nostyle":
    orig = MessageView.__init__
    from PySide6.QtWidgets import QLabel
    QLabel_setStyleSheet = QLabel.setStyleSheet
    def patched(self, turn):
        QLabel.setStyleSheet = lambda *a: None
        try: orig(self, turn)
        finally: QLabel.setStyleSheet = QLabel_setStyleSheet
    MessageView.__init__ = patched
if variant == "plain":
    from PySide6.QtCore import Qt
    orig = MessageView.__init__
    def patched(self, turn):
        orig(self, turn); self.body.setTextFormat(Qt.PlainText); self.render()
    MessageView.__init__ = patched
for n in (0, 5):
    one(variant, n)
