"""The Benchmark view: runs ``vllm-workbench bench compare`` as a separate process, shows its table and
plot, and saves them where the user chooses. The live engine can be stopped first: on a GPU it holds
most of the memory the benchmark's own engine needs. Path (d), the app itself, is an option: that
process then opens a window of its own, offscreen."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QProcess, QProcessEnvironment, QTimer, Slot
from PySide6.QtWidgets import (
    QCheckBox, QDialog, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QMessageBox, QProgressBar, QPushButton,
    QSpinBox, QTableWidget, QTableWidgetItem, QVBoxLayout,
)

from workbench.export.benchmark_results import BenchmarkResults, bar_colour, read_results
from workbench.ui.window_layout import resize_within_screen


class BenchmarkView(QDialog):
    KILL_AFTER_MS = 5000  # a cancelled run that has not ended by then is killed

    def __init__(self, model: str, engine_running, stop_engine, parent=None, ask_to_stop=None):
        super().__init__(parent)
        self.setObjectName("benchmarkView")
        self.setWindowTitle("Benchmark: plain vLLM, the workbench, Hugging Face generate, the app")
        self.model, self.engine_running, self.stop_engine = model, engine_running, stop_engine
        self.ask_to_stop = ask_to_stop or self._ask_to_stop
        # The runs' folders, in the temp folder: each goes once nothing shows it (a later run's results
        # replace it, its run failed or was cancelled, or the view closed); Save… copies what is kept.
        self.out_dir: Path | None = None  # the current run's folder
        self.results_dir: Path | None = None  # the folder of the results shown (the last run that finished)
        self.closed = False
        self.cancelled = self.stopped_live_engine = False
        self.output_lines: list[str] = []
        self.process: QProcess | None = None
        self.kill_timer = QTimer(self, singleShot=True)
        self.kill_timer.timeout.connect(self._on_kill_timer_timeout)
        self.fields = {
            "requests": QSpinBox(minimum=1, maximum=4096, value=64),
            "prompt-len": QSpinBox(minimum=1, maximum=32768, value=256),
            "output-len": QSpinBox(minimum=1, maximum=32768, value=256),
            "repeats": QSpinBox(minimum=1, maximum=20, value=3),
            "hf-time-box": QSpinBox(minimum=1, maximum=3600, value=120, suffix=" s"),
            "single-samples": QSpinBox(minimum=1, maximum=50, value=3),
        }
        self.app_path = QCheckBox("Also the app itself, (d): the real window, offscreen, on the same engine",
                                  objectName="benchAppPath")
        self.run_button = QPushButton("Run benchmark", objectName="runBenchmarkButton")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel", objectName="cancelBenchmarkButton", enabled=False)
        self.cancel_button.clicked.connect(self.cancel)
        self.save_button = QPushButton("Save…", objectName="saveBenchmarkButton", enabled=False)
        self.save_button.clicked.connect(self._on_save_clicked)
        self.progress = QProgressBar(objectName="benchmarkProgress")
        self.message = QLabel(objectName="benchmarkMessage", wordWrap=True)
        self.table = QTableWidget(objectName="benchmarkTable")
        self.plot = pg.PlotWidget(title="Output tokens/s")
        self.plot.setMinimumHeight(180)
        self.plot.getAxis("left").setWidth(64)  # room for five-digit rates
        self.plot.setLabel("left", "output tokens/s")
        self._build_layout()

    def _build_layout(self) -> None:
        form = QFormLayout()
        for name, box in self.fields.items():
            box.setObjectName(f"bench_{name}")
            form.addRow(name.replace("-", " "), box)
        self.fields["repeats"].setToolTip("8 or more for a median of paired ratios that resolves a few per cent")
        form.addRow(self.app_path)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.plot, 1)
        resize_within_screen(self, 900, 700)

    def _ask_to_stop(self) -> bool:
        answer = QMessageBox.question(
            self, "Stop the live engine?",
            "The benchmark starts an engine and a Hugging Face model of its own. On a GPU the live engine "
            "holds most of the memory they need. Stop the live engine first?")
        return answer == QMessageBox.Yes

    def command(self) -> list[str]:
        args = [sys.executable, "-m", "workbench", "bench", "--model", self.model, "compare"]
        for name, box in self.fields.items():
            args += [f"--{name}", str(box.value())]
        if self.app_path.isChecked():
            args += ["--paths", "a,b,c,d"]
        return args + ["--out", str(self.out_dir)]

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.state() != QProcess.NotRunning

    @Slot()
    def run(self) -> None:
        self.stopped_live_engine = False
        if self.engine_running() and self.ask_to_stop():
            if not self.stop_engine():  # a search uses the engine, and the user let it run: no run beside it
                return
            self.stopped_live_engine = True
        self._discard(self.out_dir)  # a failed or cancelled run's
        self.out_dir = Path(tempfile.mkdtemp(prefix="workbench-bench-"))
        self.output_lines.clear()
        if self.process is not None:
            self.process.deleteLater()  # the previous run's, finished
        self.process = QProcess(self)
        self.process.setProcessChannelMode(QProcess.MergedChannels)
        environment = QProcessEnvironment.systemEnvironment()
        environment.insert("QT_QPA_PLATFORM", "offscreen")  # path (d)'s window stays off the screen
        self.process.setProcessEnvironment(environment)
        self.process.readyReadStandardOutput.connect(self._on_process_output)
        self.process.finished.connect(self._on_process_finished)
        command = self.command()
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.save_button.setEnabled(False)
        self.cancelled = False
        self.progress.setValue(0)
        self.message.setText("Running: " + " ".join(command[1:]))
        self.process.start(command[0], command[1:])

    @Slot()
    def _on_process_output(self) -> None:
        text = bytes(self.process.readAllStandardOutput()).decode(errors="replace")
        for line in text.splitlines():
            self.output_lines.append(line)
            if line.startswith("PROGRESS "):
                _, fraction, label = line.split(" ", 2)
                self.progress.setValue(int(float(fraction) * 100))
                self.progress.setFormat(f"{label} %p%")
        del self.output_lines[:-200]

    @Slot()
    def cancel(self) -> None:
        """Asks the benchmark process to stop and returns at once; its engine processes die with it
        (the plugin's death signal). The view updates when the process has finished; a process still
        running ``KILL_AFTER_MS`` later is killed."""
        if not self.running or self.cancelled:
            return
        self.cancelled = True
        self.cancel_button.setEnabled(False)
        self.progress.setFormat("Cancelling… %p%")
        self.process.terminate()
        self.kill_timer.start(self.KILL_AFTER_MS)

    @Slot()
    def _on_kill_timer_timeout(self) -> None:
        if self.running:
            self.process.kill()

    def closeEvent(self, event) -> None:
        self.cancel()  # closing the view while it runs stops the run: nothing keeps running unseen
        self.closed = True
        if not self.running:  # else once the run has ended
            self._discard_all()
        super().closeEvent(event)

    def _discard(self, folder: Path | None) -> None:
        """Removes a run's folder that no results shown are read from."""
        if folder is not None and folder != self.results_dir:
            shutil.rmtree(folder, ignore_errors=True)

    def _discard_all(self) -> None:
        folders, self.results_dir = (self.out_dir, self.results_dir), None
        for folder in folders:
            self._discard(folder)
        self.out_dir = None

    @Slot(int, QProcess.ExitStatus)
    def _on_process_finished(self, exit_code: int, status) -> None:
        self.kill_timer.stop()
        if self.closed:
            self._discard_all()
            return
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.save_button.setEnabled(self.results_dir is not None)
        restart = " The live engine was stopped for the run: Engine > Restart engine brings it back." \
            if self.stopped_live_engine else ""
        if self.cancelled:
            self.progress.setFormat("Cancelled")
            self.message.setText("Cancelled. The earlier results (if any) are still shown and can be saved." + restart)
            return
        csv_path = self.out_dir / "benchmark.csv" if self.out_dir else None
        if exit_code != 0 or csv_path is None or not csv_path.exists():
            tail = "\n".join(self.output_lines[-8:])
            self.message.setText(f"The benchmark failed (exit code {exit_code}). Its last output:\n{tail}{restart}")
            return
        shown, self.results_dir = self.results_dir, self.out_dir
        self._discard(shown)  # the earlier run's, replaced
        self.show_results(read_results(csv_path))
        self.save_button.setEnabled(True)
        self.message.setText("Done. Save… writes the table (Markdown, CSV), the plot (SVG) and a picture of it (PNG)."
                             + restart)

    def show_results(self, results: BenchmarkResults) -> None:
        """The table as the results file holds it, and a bar per path."""
        body = results.table()
        self.table.setColumnCount(len(results.columns))
        self.table.setHorizontalHeaderLabels(list(results.columns))
        self.table.setRowCount(len(body))
        for r, row in enumerate(body):
            for c, value in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(value))
        self.table.resizeColumnsToContents()
        self.plot.clear()
        for i, row in enumerate(results.rows):
            rate = row.tokens_per_s
            self.plot.addItem(pg.BarGraphItem(x=[i], height=[rate], width=0.6, brush=bar_colour(row.path)))
            label = pg.TextItem(f"{rate:,.0f}", anchor=(0.5, 1.0), color="w")
            label.setPos(i, rate)
            self.plot.addItem(label)
        self.plot.getAxis("bottom").setTicks([[(i, row.path) for i, row in enumerate(results.rows)]])
        if results.rows:
            self.plot.setYRange(0, max(row.tokens_per_s for row in results.rows) * 1.15, padding=0)

    @Slot()
    def _on_save_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Save the benchmark to")
        if folder:
            self.save_to(Path(folder))

    def save_to(self, folder: Path) -> list[Path]:
        folder.mkdir(parents=True, exist_ok=True)
        saved = []
        for name in ("benchmark.md", "benchmark.csv", "benchmark.svg"):
            saved.append(Path(shutil.copy2(self.results_dir / name, folder / name)))
        png = folder / "benchmark.png"
        self.plot.grab().save(str(png))
        saved.append(png)
        self.message.setText(f"Saved to {folder}")
        return saved
