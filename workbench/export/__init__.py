"""Files a user hands to colleagues: a session's folder and zip (``session_export``: session.json,
requests.csv, timeseries.csv, the plots and heatmap, report.html) and a conversation as JSON or
Markdown (``conversation``); a benchmark's results file (``benchmark_results``, the one schema that
``bench compare`` writes and the Benchmark view reads). No Qt: pictures come in as bytes that the
window rendered."""
