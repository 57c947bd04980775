"""One results schema for ``bench compare``'s CSV and the Benchmark view; files written before stay readable."""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.export.benchmark_results import COLUMNS, COLUMNS_BEFORE_APP, RatioRow, read_results, results_csv

RESULT_FILES = sorted((Path(__file__).resolve().parent.parent / "docs" / "results").glob("*/benchmark.csv"))


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: p.parent.name)
def test_results_files_read_and_write_back_unchanged(path):
    results = read_results(path)
    assert results.rows[0].path == "(a) plain vLLM"
    assert results.rows[1].path in ("(b) workbench loop", "(d) workbench app")  # each run: (a) and (b), (d) or both
    assert results.ratios[0].name in ("b/a throughput", "d/a throughput")
    assert results_csv(results) == path.read_bytes().decode("utf-8")


def test_a_file_of_other_columns_is_refused(tmp_path):
    other = tmp_path / "memory.csv"
    other.write_text("time_s,gpu\n1.0,0\n")
    with pytest.raises(ValueError, match="not a benchmark results file"):
        read_results(other)


def test_benchmark_view_shows_a_saved_results_file(qtbot):
    from workbench.ui.benchmark_view import BenchmarkView

    path = next(p for p in RESULT_FILES if p.parent.name == "cpu-demo-shared-engine")
    view = BenchmarkView(str(path), lambda: False, lambda: None)
    qtbot.addWidget(view)
    results = read_results(path)
    view.show_results(results)
    header = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    assert header == list(results.columns) == list(COLUMNS_BEFORE_APP)  # written before (d): no client CPU
    assert view.table.rowCount() == len(results.rows) + len(results.ratios)
    assert view.table.item(0, 1).text() == "12838.9" and view.table.item(2, 0).text() == "(c) HF generate, batch 1"
    per_repeat = RatioRow("b/a throughput per repeat", 0.9974, (0.8332, 1.0401))
    assert view.table.item(len(results.rows) + 4, 2).text() == per_repeat.cells()[2] == "0.8332–1.0401"
    import pyqtgraph as pg

    bars = [item for item in view.plot.getPlotItem().items if isinstance(item, pg.BarGraphItem)]
    assert [list(bar.opts["height"]) for bar in bars] == [[r.tokens_per_s] for r in results.rows]


def test_a_file_with_the_app_path_reads_back_with_its_client_cpu(tmp_path, qtbot):
    from workbench.export.benchmark_results import BenchmarkResults, ResultRow
    from workbench.ui.benchmark_view import BenchmarkView

    rows = tuple(ResultRow(name, rate, "", (1.0, 2.0), (0.5, 0.9), 2048.0, 500.0, cpu)
                 for name, rate, cpu in (("(a) plain vLLM", 1000.0, 17.25), ("(b) workbench loop", 990.0, 18.5),
                                         ("(d) workbench app", 970.0, 24.75)))
    written = BenchmarkResults(rows, (RatioRow("d/a throughput per repeat", 0.97, (0.9, 1.01)),))
    path = tmp_path / "benchmark.csv"
    path.write_text(results_csv(written), encoding="utf-8")
    read = read_results(path)
    assert read == written and read.columns == COLUMNS and COLUMNS[-1] == "client_cpu_us_per_token"
    view = BenchmarkView("demo", lambda: False, lambda: None)
    qtbot.addWidget(view)
    view.show_results(read)
    assert [view.table.item(2, c).text() for c in (0, len(COLUMNS) - 1)] == ["(d) workbench app", "24.75"]
    assert "--paths" not in view.command()
    view.app_path.setChecked(True)
    assert view.command()[view.command().index("--paths") + 1] == "a,b,c,d"
