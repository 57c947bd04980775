"""Prompt files without an engine: malformed lines each named with their line and reason, valid lines
kept around them; skip or stop; the results table at 100,000 rows, sorted and filtered."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from batch_files import looked, open_dialog, openai_line
from workbench.batch.export import export_rows
from workbench.batch.formats import detect_format, parse_prompts
from workbench.batch.records import BatchPrompt
from workbench.batch.loader import PromptLoader
from workbench.batch.prompt_file import LineProblem, LineReader
from workbench.batch.results import DONE, ERROR
from workbench.engine.backend import Message
from workbench.engine.metrics import RequestFigures

GOOD_JSONL = json.dumps({"prompt": "fine"})
GOOD_OPENAI = openai_line("ok-1", "fine")
GOOD_OPENAI_2 = openai_line("ok-2", "fine too")


def _chat_body(messages) -> str:
    return json.dumps({"custom_id": "m", "method": "POST", "url": "/v1/chat/completions",
                       "body": {"messages": messages}})


# (name, format, CSV column, the bad line's bytes, words its reason must hold); each bad line is put
# between two valid lines, so it is line 2, and both neighbours must come through.
MALFORMED = [
    ("broken JSON, truncated", "jsonl", None, b'{"prompt": "half', "broken JSON"),
    ("broken JSON, trailing comma", "jsonl", None, b'{"prompt": "x",}', "broken JSON"),
    ("broken JSON, single quotes", "openai", None, b"{'custom_id': 'x'}", "broken JSON"),
    ("a JSON list, not an object", "jsonl", None, b'["prompt", "x"]', "expected a JSON object"),
    ("missing prompt and messages", "jsonl", None, b'{"text": "x"}', 'missing field: "prompt" or "messages"'),
    ("an empty prompt", "jsonl", None, b'{"prompt": "  "}', '"prompt" is empty'),
    ("a prompt that is a number", "jsonl", None, b'{"prompt": 42}', '"prompt" must be a string'),
    ("both prompt and messages", "jsonl", None, b'{"prompt": "x", "messages": []}', "both"),
    ("messages not a list", "jsonl", None, b'{"messages": "hi"}', '"messages" must be a non-empty list'),
    ("a bad role", "jsonl", None, b'{"messages": [{"role": "wizard", "content": "x"}]}', 'role "wizard"'),
    ("a message without text", "openai", None, _chat_body([{"role": "user", "content": {"a": 1}}]).encode(),
     "message 1 has no text content"),
    ("missing custom_id and body", "openai", None, b'{"method": "POST", "url": "/v1/chat/completions"}',
     "missing fields: custom_id, body"),
    ("missing url", "openai", None, b'{"custom_id": "x", "method": "POST", "body": {}}', "missing field: url"),
    ("an unsupported endpoint", "openai", None, openai_line("e", "x", url="/v1/embeddings").encode(),
     "url \"/v1/embeddings\" is not supported"),
    ("method GET", "openai", None, openai_line("g", "x").replace('"POST"', '"GET"').encode(), 'method "GET"'),
    ("a duplicate custom_id", "openai", None, openai_line("ok-1", "again").encode(), "repeats line 1's"),
    ("streaming asked for", "openai", None, openai_line("s", "x", stream=True).encode(), '"stream": true'),
    ("max_tokens below 1", "openai", None, openai_line("n", "x", max_tokens=0).encode(), "body.max_tokens must be 1"),
    ("a temperature that is text", "openai", None, openai_line("t", "x", temperature="hot").encode(),
     "body.temperature must be a number"),
    ("chat body without messages", "openai", None,
     b'{"custom_id": "q", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m"}}',
     "missing field: body.messages"),
    ("a body that is not an object", "openai", None,
     b'{"custom_id": "q", "method": "POST", "url": "/v1/completions", "body": "x"}', '"body" must be a JSON object'),
    ("not UTF-8", "text", None, b"caf\xe9 au lait", "not UTF-8 text: byte 0xe9 at byte 4"),
    ("not UTF-8 inside JSON", "jsonl", None, b'{"prompt": "\xff\xfe"}', "not UTF-8"),
    ("a line of 10 MB", "jsonl", None, b'{"prompt": "' + b"x" * (10 << 20) + b'"}', "the line is 10.0 MB long"),
    ("a NUL byte past the first 8 KiB", "text", None, None, "binary data (a NUL byte) in the line"),
    ("a CSV row without the prompt field", "csv", "prompt", b"3", "the row has 1 field; the 'prompt' column is field 2"),
    ("a CSV row with an empty prompt", "csv", "prompt", b"3,", "the 'prompt' field is empty"),
    ("a CSV prompt with an unquoted comma", "csv", "prompt", b"3,hello, world",
     "the row has 3 fields, the header 2: put a field that holds a comma in double quotes"),
]


def _write(tmp_path, fmt: str, bad: bytes | None) -> tuple[object, int, int]:
    """The file, the bad line's number and the number of valid lines."""
    name = {"csv": "p.csv", "text": "p.txt"}.get(fmt, "p.jsonl")
    path = tmp_path / name
    good = {"jsonl": [GOOD_JSONL] * 2, "openai": [GOOD_OPENAI, GOOD_OPENAI_2], "text": ["fine", "fine too"],
            "csv": ["1,fine", "2,fine too"]}[fmt]
    header = b"id,prompt\n" if fmt == "csv" else b""
    padding = []
    if bad is None:  # the NUL case: valid text for the first 8 KiB, so the file reads as text
        padding, bad = [b"padding %d" % i for i in range(1200)], b"a\x00b"
    lines = [good[0].encode(), *padding, bad, good[1].encode()]
    path.write_bytes(header + b"\n".join(lines) + b"\n")
    return path, len(padding) + (3 if fmt == "csv" else 2), len(padding) + 2


@pytest.mark.parametrize("name, fmt, column, bad, reason", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_line_is_named_and_its_neighbours_kept(tmp_path, name, fmt, column, bad, reason):
    path, bad_line, num_valid = _write(tmp_path, fmt, bad)
    loader = PromptLoader(path, fmt, column, on_problem="skip")
    results = loader.read_all()
    assert [(p.line_no, reason in p.reason) for p in loader.problems] == [(bad_line, True)], loader.problems
    assert results.num_rows == num_valid, "every valid line around the bad one is kept"
    assert results.prompts[-1].line_no == bad_line + 1


@pytest.mark.parametrize("content, reason", [
    (b"", "line 1: the file is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "line 3: binary data (a NUL byte at byte 9"),
    (gzip.compress(b'{"prompt": "hi"}\n'), "line 1: this is a gzip-compressed file, not text: unpack it first"),
    (b"PK\x03\x04" + bytes(40), "line 1: this is a zip archive, not text: unpack it first"),
])
def test_an_empty_binary_or_packed_file_is_one_clear_problem_and_said_as_the_file_s(tmp_path, content, reason):
    path = tmp_path / "prompts.txt"
    path.write_bytes(content)
    loader = PromptLoader(path, "text")
    loader.read_all()
    assert len(loader.problems) == 1 and str(loader.problems[0]).startswith(reason), loader.problems
    assert loader.problems[0].fatal and loader.results.num_rows == 0 and loader.done
    # the file is what cannot be read: not "1 malformed line left out"
    assert loader.summary() == f"No prompts read from prompts.txt: {loader.problems[0].reason}."
    assert "malformed" not in loader.summary()


WINDOWS_TEXT = {  # (file name, the UTF-8 text, format): what Windows' tools write, read as their UTF-8 twins
    "powershell.txt": ("What is a block?\r\nCafé au lait?\r\n", "text"),
    "notepad.jsonl": ('{"prompt": "Was ist ein Block?"}\r\n{"prompt": "Grüß dich"}\r\n', "jsonl"),
    "export.csv": ('prompt,note\r\nCafé au lait,a\r\n"two\nlines, one prompt",b\r\n', "csv"),
    "alpaca.json": (json.dumps([{"instruction": "Say hi", "input": "", "output": "hi"},
                                {"instruction": "Grüß dich", "input": "", "output": "x"}], indent=2), "alpaca"),
}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-bom", "utf-8-sig"])
@pytest.mark.parametrize("name", list(WINDOWS_TEXT))
def test_utf16_with_its_byte_order_mark_reads_as_its_utf8_twin(tmp_path, name, encoding):
    """PowerShell's ``>`` and Notepad's "Unicode" write UTF-16 with a byte-order mark: it was "binary data (a NUL
    byte at byte 2 of the file): this is not a text file of prompts", which is not true."""
    text, fmt = WINDOWS_TEXT[name]
    twin, path = tmp_path / f"utf8-{name}", tmp_path / name
    twin.write_text(text, encoding="utf-8", newline="")
    data = b"\xfe\xff" + text.encode("utf-16-be") if encoding == "utf-16-be-bom" else text.encode(encoding)
    path.write_bytes(data)
    assert detect_format(path) == detect_format(twin) == fmt
    loader, expected = PromptLoader(path, fmt), PromptLoader(twin, fmt).read_all()
    results = loader.read_all()
    assert loader.problems == [] and results.num_rows == expected.num_rows == 2
    assert [p.preview() for p in results.prompts] == [p.preview() for p in expected.prompts]
    assert [p.line_no for p in results.prompts] == [p.line_no for p in expected.prompts]
    assert loader.fraction == 1.0


def test_files_joined_with_their_byte_order_marks_read_whole(tmp_path):
    """``cat a.jsonl b.jsonl`` of two files an editor saved with a byte-order mark: line 2 was "broken JSON:
    Unexpected UTF-8 BOM"."""
    path = tmp_path / "joined.jsonl"
    path.write_bytes(b"".join("\ufeff".encode() + GOOD_JSONL.encode() + b"\n" for _ in range(3)))
    loader = PromptLoader(path, "jsonl")
    assert loader.read_all().num_rows == 3 and loader.problems == []


def test_utf16_without_a_byte_order_mark_says_so_not_binary(tmp_path):
    path = tmp_path / "prompts.txt"
    path.write_bytes("What is a block?\nCafe?\n".encode("utf-16-le"))
    loader = PromptLoader(path, "text")
    loader.read_all()
    assert [str(p) for p in loader.problems] == ["line 1: UTF-16 text without a byte-order mark, which cannot be told "
                                                 "from binary data: save the file as UTF-8 (or as UTF-16 with its "
                                                 "byte-order mark)"]


@pytest.mark.parametrize("header, rows, delimiter", [
    ("prompt;category", ['Was ist ein Block?;a', '"Café; au lait";b'], ";"),  # Excel where the decimal mark is ","
    ('"prompt";"note"', ['"a; b";x', "c, d;y"], ";"),
    ("prompt\tnote", ["hello, you\tx", "a; b\ty"], "\t"),  # a tab-separated file named .csv
    ("prompt,note", ["x; y,1", "z,2"], ","),
])
def test_a_csv_s_delimiter_is_the_one_its_header_is_split_by(tmp_path, header, rows, delimiter):
    from workbench.batch.formats import csv_columns

    path = tmp_path / "excel.csv"
    path.write_bytes(("\ufeff" + "\r\n".join([header, *rows]) + "\r\n").encode("utf-8"))
    assert csv_columns(path)[0] == "prompt" and len(csv_columns(path)) == 2
    loader = PromptLoader(path, "csv", "prompt")
    results = loader.read_all()
    expected = [next(__import__("csv").reader([row], delimiter=delimiter))[0] for row in rows]
    assert loader.problems == [] and [p.preview() for p in results.prompts] == expected


@pytest.mark.parametrize("lines, delimiter", [
    (["sep=;", "prompt;note", "Café, au lait;x", "b;y"], ";"),  # Excel's line that names the delimiter
    (["SEP=|", "note|prompt", "x|Café, au lait", "y|b"], "|"),
    (["sep=,,", "prompt,note", '"Café, au lait",x', "b,y"], ","),  # padded to the columns by a writer
])
def test_a_csv_s_first_line_sep_names_its_delimiter(tmp_path, lines, delimiter):
    from workbench.batch.formats import csv_columns, prompt_column

    path = tmp_path / "excel.csv"
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    assert sorted(csv_columns(path)) == ["note", "prompt"] and prompt_column(path) == "prompt"
    loader = PromptLoader(path, "csv", "prompt")
    results = loader.read_all()
    assert loader.problems == [] and [p.preview() for p in results.prompts] == ["Café, au lait", "b"]
    assert [p.line_no for p in results.prompts] == [3, 4]


def test_an_exported_csv_opens_in_excel_as_utf8_and_opens_again_as_prompts(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("Was ist ein Café?\n東京について\n", encoding="utf-8")
    results = PromptLoader(path, "text").read_all()
    out = tmp_path / "out.csv"
    list(export_rows(results, out, "csv"))
    assert out.read_bytes().startswith(b"\xef\xbb\xbfline,")  # Excel reads UTF-8 only with its byte-order mark
    again = PromptLoader(out, "csv", "prompt")
    assert [p.preview() for p in again.read_all().prompts] == ["Was ist ein Café?", "東京について"]
    assert again.problems == []


@pytest.mark.parametrize("document", [
    {"prompts": ["What is a block?", "Why do chats share blocks?"]},
    {"version": "v2", "meta": {"source": "x", "tags": ["a"]}, "data": [{"prompt": "What is a block?"},
                                                                     {"prompt": "Why do chats share blocks?"}]},
])
@pytest.mark.parametrize("indent", [2, None])
def test_a_json_object_that_holds_the_records_is_read_by_its_array(tmp_path, document, indent):
    """json.dump(data, f, indent=2) of a dict was "broken JSON" on every line but one, whose text became a prompt."""
    from workbench.batch.formats import detect_container

    path = tmp_path / "prompts.json"
    path.write_text(json.dumps(document, indent=indent) + "\n")
    assert detect_container(path) == "object"
    loader = PromptLoader(path, detect_format(path))
    results = loader.read_all()
    assert loader.problems == [] and [p.preview() for p in results.prompts] == ["What is a block?",
                                                                                "Why do chats share blocks?"]


def test_records_printed_one_after_another_are_read_and_jsonl_stays_lines(tmp_path):
    """Records as `jq .` prints them, each over many lines, were "broken JSON" on every line."""
    from workbench.batch.formats import detect_container

    path = tmp_path / "jq.json"
    path.write_text(json.dumps({"prompt": "What is a block?"}, indent=2) + "\n"
                    + json.dumps({"prompt": "Why share?", "max_tokens": 8}, indent=2) + "\n")
    assert detect_container(path) == "object"
    loader = PromptLoader(path, detect_format(path))
    results = loader.read_all()
    assert [(p.line_no, p.preview()) for p in results.prompts] == [(1, "What is a block?"), (4, "Why share?")]
    assert loader.problems == [] and dict(results.prompts[1].sampling) == {"max_tokens": 8}
    settings = tmp_path / "settings.json"  # one object that is no record: said as such
    settings.write_text(json.dumps({"model": "x", "temperature": 0.2}, indent=2))
    loader = PromptLoader(settings, detect_format(settings))
    loader.read_all()
    assert [str(p) for p in loader.problems] == [
        'line 1: missing field: "prompt" or "messages" (the record has: model, temperature)']
    lines = tmp_path / "mt-bench.jsonl"  # records that hold a list, one a line
    lines.write_text("".join(json.dumps({"question_id": i, "turns": ["Write a poem.", "Shorter."]}) + "\n"
                             for i in range(3)))
    assert detect_container(lines) == "lines"


def test_alpaca_s_columns_in_a_csv_are_read_as_alpaca_s_records_input_and_all(qtbot, tmp_path):
    """A CSV of instruction, input and output (as a dataset viewer exports alpaca) was read by its instruction
    column alone: every prompt lost its input."""
    path = tmp_path / "alpaca.csv"
    path.write_text('instruction,input,output\nTranslate to German,the cat,die Katze\n"Summarize, briefly",,ok\n',
                    encoding="utf-8")
    assert detect_format(path) == "alpaca"
    loader = PromptLoader(path, "alpaca")
    assert [(p.line_no, p.preview(), p.reference) for p in loader.read_all().prompts] == [
        (2, "Translate to German\nthe cat", "die Katze"), (3, "Summarize, briefly", "ok")]
    dialog = open_dialog(qtbot, str(path))
    assert dialog.chosen() == ("alpaca", None)
    assert dialog.preview.text() == "Asks: Translate to German ⏎ the cat\nReference: die Katze"


def test_a_csv_without_the_chosen_column_names_the_columns_it_has(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,question\n1,hi\n")
    items = list(parse_prompts(path, "csv", "prompt"))
    assert len(items) == 1 and isinstance(items[0], LineProblem) and items[0].line_no == 1
    assert "no column named 'prompt'" in items[0].reason and "'question'" in items[0].reason


def test_stop_keeps_the_lines_before_the_problem_and_ask_waits_for_the_choice(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join([GOOD_JSONL, GOOD_JSONL, "{broken", GOOD_JSONL, "[]", GOOD_JSONL]) + "\n")
    stopped = PromptLoader(path, "jsonl", on_problem="stop")
    assert stopped.read_all().num_rows == 2 and stopped.stopped_at.line_no == 3
    assert "stopped at line 3" in stopped.summary()
    asking = PromptLoader(path, "jsonl", on_problem="ask")
    assert asking.read() is False and asking.awaiting.line_no == 3 and asking.results.num_rows == 2
    asking.decide("skip")
    asking.read_all()
    assert asking.results.num_rows == 4 and [p.line_no for p in asking.problems] == [3, 5]


def test_formats_are_detected_from_name_and_first_line(tmp_path):
    cases = {"a.jsonl": GOOD_OPENAI, "b.jsonl": GOOD_JSONL, "c.csv": "prompt\nx", "d.txt": "hello", "e.json": "{"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text + "\n")
    assert [detect_format(tmp_path / name) for name in cases] == ["openai", "jsonl", "csv", "text", "jsonl"]


def _fill(results, num_rows: int) -> None:
    """Figures as a finished run would leave them: a pure test of the table's sort and filter."""
    rng = np.random.default_rng(1)
    ttfts = rng.uniform(0.01, 2.0, num_rows)
    for row in range(num_rows):
        if row % 10 == 9:
            results.finish(row, ERROR, "error", None, "refused")
            continue
        figures = RequestFigures(20, 0, 5 + row % 7, float(ttfts[row]), 100.0, queue_s=0.001, e2e_s=1.0)
        results.finish(row, DONE, "length" if row % 3 else "stop", figures)


def test_a_text_column_sorts_as_python_sorts_its_texts_ties_in_file_order(qtbot):
    """Text columns are sorted by each text's rank in Python's sort: a fixed-width numpy array of 100,000 outputs
    of 2,000 characters took 770 MB and 1.7 s (docs/results/cpu-batch-text-sort/)."""
    from PySide6.QtCore import Qt

    from workbench.batch.results import BatchResults
    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    results = BatchResults()
    outputs = ["beta", "alpha", "Beta", "alpha", "", "alpha x" + "y" * 5000, "é", "alpha"]
    for line_no, output in enumerate(outputs, 1):
        row = results.append(BatchPrompt(line_no, prompt=f"prompt {9 - line_no}"))
        results.texts[row] = output
    model = BatchTableModel(results)
    text, prompt = (next(i for i, (key, _) in enumerate(COLUMNS) if key == name) for name in ("text", "prompt"))
    model.sort(text, Qt.AscendingOrder)
    expected = sorted(range(len(outputs)), key=outputs.__getitem__)  # stable: the three "alpha" in file order
    assert list(model.order) == expected == [4, 2, 1, 3, 7, 5, 0, 6]
    model.sort(text, Qt.DescendingOrder)
    assert list(model.order) == expected[::-1]
    model.sort(prompt, Qt.AscendingOrder)  # ranked on a worker
    qtbot.waitUntil(lambda: not model.sorting)
    assert list(model.order) == list(range(len(outputs)))[::-1]  # "prompt 1" is the last row's


def test_the_finish_column_sorts_by_its_names_ties_in_file_order(qtbot):
    """By each row's finish reason as Python sorts the names ("" for a row not ended first), from the few names'
    ranks: sorting 100,000 strings at each refresh of a run took 10 ms."""
    from PySide6.QtCore import Qt

    from workbench.batch.results import BatchResults
    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    results = BatchResults()
    reasons = ["stop", "length", None, "abort", "stop", "error", "length", None]
    for line_no, reason in enumerate(reasons, 1):
        row = results.append(BatchPrompt(line_no, prompt=f"p{line_no}"))
        if reason is not None:
            results.finish(row, ERROR if reason in ("abort", "error") else DONE, reason, None)
    model = BatchTableModel(results)
    model.sort(next(i for i, (key, _) in enumerate(COLUMNS) if key == "finish_reason"), Qt.AscendingOrder)
    expected = sorted(range(len(reasons)), key=lambda row: reasons[row] or "")
    assert list(model.order) == expected == [2, 7, 3, 5, 1, 6, 0, 4]


def test_a_table_sorted_by_output_while_a_run_streams_places_only_the_rows_that_changed(qtbot):
    """A run streams into a few rows at a time; the table sorted by Output ranked all 100,000 texts again at each
    refresh (60 to 80 ms, four times a second). Only the changed rows are placed again now, and the order is still
    exactly Python's stable sort of all the texts."""
    from PySide6.QtCore import Qt

    from workbench.batch.results import BatchResults
    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    rng = np.random.default_rng(3)
    results = BatchResults()
    for line_no in range(1, 2001):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    model = BatchTableModel(results)
    text = next(i for i, (key, _) in enumerate(COLUMNS) if key == "text")
    model.sort(text, Qt.DescendingOrder)
    words = ["a", "b", "ab", "ba", " ", "é", ""]
    for tick in range(30):
        running = rng.choice(results.num_rows, 40, replace=False)
        for row in running:
            results.add_text(int(row), str(rng.choice(words)))
        if tick % 5 == 4:  # rows still being read from the file
            for _ in range(10):
                results.append(BatchPrompt(results.num_rows + 1, prompt="late"))
        assert model.refresh()
        expected = sorted(range(results.num_rows), key=results.texts.__getitem__)[::-1]
        assert list(model.order) == expected, f"tick {tick}"
        assert 0 < model._text_order.placed <= 50, "the changed rows placed, not all sorted again"
    results.set_status(0, DONE)  # no text changed: nothing placed, the order kept
    assert model.refresh() and model._text_order.placed == 0
    assert list(model.order) == sorted(range(results.num_rows), key=results.texts.__getitem__)[::-1]


def _kept_results(prompts: list[str]):
    """Results as a start reads a kept run back: each prompt's stored JSON, read when first asked for."""
    from workbench.batch.results import BatchResults
    from workbench.batch.stored_prompts import StoredPrompts
    from workbench.storage.codec import prompt_from_json, to_json

    texts = [to_json(BatchPrompt(line_no, prompt=prompt)) for line_no, prompt in enumerate(prompts, 1)]
    results = BatchResults()
    results.append_stored(StoredPrompts(texts, prompt_from_json), np.arange(1, len(prompts) + 1), 0, 0)
    return results


def test_a_kept_run_sorted_by_its_prompts_reads_them_on_a_worker_then_sorts(qtbot):
    """A kept run's prompts are read back from their JSON when first asked for; a sort by the Prompt column
    needs them all (0.8 s for 100,000, on the GUI thread). The rows are now ranked on a worker that reads them,
    saying how far it is, the window's order staying as it was meanwhile."""
    from PySide6.QtCore import Qt

    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    prompt = [key for key, _ in COLUMNS].index("prompt")
    words = [f"{(row * 7919) % 30_000:05d} question" for row in range(30_000)]
    results = _kept_results(words)
    model = BatchTableModel(results)
    progress = []
    model.reading.connect(lambda done, total: progress.append((done, total)))
    model.sort(prompt, Qt.DescendingOrder)
    assert model.sorting and list(model.order[:3]) == [0, 1, 2], "the order waits for the ranks"
    qtbot.waitUntil(lambda: not model.sorting, timeout=60_000)
    assert [words[row] for row in model.order] == sorted(words, reverse=True)
    assert results.prompts.num_read == len(words)
    assert progress[0] == (0, 30_000) and (30_000, 30_000) in progress and progress[-1] == (0, 0)
    model.sort(prompt, Qt.AscendingOrder)  # ranked once: sorted at once
    assert not model.sorting and [words[row] for row in model.order] == sorted(words)

    # another kept run shown while sorted by Prompt: its prompts are read in turn, then it is sorted too
    other = _kept_results(["b", "c", "a"])
    model.set_results(other)
    qtbot.waitUntil(lambda: not model.sorting, timeout=60_000)
    assert list(model.order) == [2, 0, 1]


def test_a_kept_prompt_that_does_not_read_back_says_so_and_leaves_the_order(qtbot):
    from PySide6.QtCore import Qt

    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    results = _kept_results(["b", "a", "c"])
    results.prompts._texts[1] = "{not json"
    model = BatchTableModel(results)
    with qtbot.waitSignal(model.reading_failed, timeout=60_000) as failed:
        model.sort([key for key, _ in COLUMNS].index("prompt"), Qt.AscendingOrder)
    assert "did not read back" in failed.args[0]
    qtbot.waitUntil(lambda: not model.sorting)
    assert model.sort_key is None and list(model.order) == [0, 1, 2]


def test_100k_lines_parsed_into_the_table_model_then_sorted_and_filtered(qapp, tmp_path):
    # How long it takes is a benchmark's figure (bench batch), not this test's: it must pass on a busy machine.
    from PySide6.QtCore import Qt

    from workbench.ui.batch_table import COLUMNS, BatchTableModel

    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        for i in range(100_000):
            stream.write(json.dumps({"prompt": f"Question {i}: what is block {i % 977}?"}) + "\n")
    loader = PromptLoader(path, "jsonl")
    model = BatchTableModel()
    while loader.read(5000):
        pass
    model.set_results(loader.results)
    assert model.rowCount() == 100_000
    _fill(loader.results, 100_000)
    model.refresh()
    ttft_column = [key for key, _ in COLUMNS].index("ttft_s")
    model.sort(ttft_column, Qt.DescendingOrder)
    model.set_filters(DONE, "length")
    ttft = loader.results.column("ttft_s")[model.order]
    assert np.all(np.diff(ttft) <= 0), "sorted by TTFT, longest first"
    expected = sum(1 for row in range(100_000) if row % 10 != 9 and row % 3)
    assert model.rowCount() == expected and {model.display(r, "finish_reason") for r in model.order[:50]} == {"length"}
    assert model.data(model.index(0, ttft_column)) == f"{ttft[0] * 1e3:,.1f}"
    model.set_filters(ERROR, None)
    assert model.rowCount() == 10_000


def test_an_export_stopped_halfway_leaves_no_file(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("".join(f"prompt {i}\n" for i in range(5000)))
    results = PromptLoader(path, "text").read_all()
    out = tmp_path / "out.csv"
    rows = export_rows(results, out, "csv")
    assert next(rows) == 1000
    rows.close()
    assert not out.exists() and not list(tmp_path.glob("*.part"))
    assert list(export_rows(results, out, "csv"))[-1] == 5000 and len(out.read_text().splitlines()) == 5001


def test_a_csv_without_a_prompt_like_name_offers_the_column_with_the_most_text(qtbot, tmp_path):
    """A German "Nr;Frage;Thema" offered "Nr", its numbers, and showed no first record to tell."""
    from workbench.batch.formats import prompt_column

    path = tmp_path / "fragen.csv"
    path.write_text("Nr;Thema;Frage\n1,5;Speicher;Was ist ein Block?\n2;Präfix;Warum teilen zwei Chats Blöcke?\n"
                    "3;Planung;\"Was heißt\n„preempted“?\"\n", encoding="utf-8")
    assert prompt_column(path) == "Frage"
    dialog = open_dialog(qtbot, str(path))
    assert dialog.chosen() == ("csv", "Frage") and dialog.preview.text() == "Asks: Was ist ein Block?"
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("a,b\n1,2\n", encoding="utf-8")
    assert prompt_column(numbers) is None


def test_the_open_dialog_s_preview_reads_only_the_start_of_a_csv_with_a_quote_left_open(qtbot, tmp_path):
    from workbench.batch.file_look import PREVIEW_LINES

    path = tmp_path / "open-quote.csv"
    path.write_text("prompt,note\n\"never closed,x\n" + "".join(f"row {i},y\n" for i in range(PREVIEW_LINES * 50)))
    lines = LineReader(path, max_lines=PREVIEW_LINES)
    assert len(list(lines)) == PREVIEW_LINES and lines.bytes_read < lines.size / 40
    dialog = open_dialog(qtbot, str(path))
    assert dialog.preview.text().startswith("line 2: a quote (\") opened in this row is not closed")


def test_the_open_dialog_guesses_the_format_and_offers_the_csv_columns(qtbot, tmp_path):
    table = tmp_path / "questions.csv"
    table.write_text("id,question,answer\n1,hi,there\n")
    dialog = open_dialog(qtbot, str(table))
    assert dialog.chosen() == ("csv", "question"), "a column named like a prompt is chosen first"
    assert [dialog.column.itemText(i) for i in range(dialog.column.count())] == ["id", "question", "answer"]
    assert dialog.preview.text() == "Asks: hi", "the chosen column's first row, as it will be asked"
    dialog.column.setCurrentText("answer")
    looked(qtbot, dialog)
    assert dialog.chosen() == ("csv", "answer") and dialog.preview.text() == "Asks: there"
    dialog.column.setCurrentText("answers")
    looked(qtbot, dialog)
    assert dialog.preview.text().startswith("line 1: the CSV has no column named 'answers'")
    batch = tmp_path / "batch.jsonl"
    batch.write_text(GOOD_OPENAI + "\n")
    dialog = open_dialog(qtbot, str(batch))
    assert dialog.chosen() == ("openai", None) and not dialog.column.isEnabled()
    assert dialog.column.currentText() == "", "blank where the format reads no column or field"


DATASET_RECORDS = [  # (name, records, the format detected, (prompt, reference) of each): datasets as published
    ("GSM8K", [{"question": "Natalia sold clips to 48 friends. How many?", "answer": "She sold 48.\n#### 48"}],
     "field", [("Natalia sold clips to 48 friends. How many?", "She sold 48.\n#### 48")]),
    ("MMLU", [{"question": "2 + 2?", "subject": "math", "choices": ["3", "4"], "answer": 1}],
     "field", [("2 + 2?", "1")]),
    ("OpenOrca", [{"id": "niv.1", "system_prompt": "You are a helpful assistant.", "question": "Translate: hi",
                   "response": "hallo"}], "field", [("Translate: hi", "hallo")]),
    ("a corpus of text", [{"text": "Once upon a time"}, {"text": "The sea"}], "field",
     [("Once upon a time", None), ("The sea", None)]),
    ("Dolly", [{"instruction": "When did it start?", "context": "It started in 2000.", "response": "2000",
                "category": "closed_qa"}], "alpaca", [("When did it start?\nIt started in 2000.", "2000")]),
    ("a list of prompts", ["What is a block?", "Why share blocks?"], "jsonl",
     [("What is a block?", None), ("Why share blocks?", None)]),
    ("UltraChat", [{"prompt": "How does a KV cache work?", "prompt_id": "ab12",
                    "messages": [{"content": "How does a KV cache work?", "role": "user"},
                                 {"content": "It keeps the keys.", "role": "assistant"}]}],
     "jsonl", [("How does a KV cache work?", "It keeps the keys.")]),
    ("LMSYS-Chat-1M", [{"conversation_id": "c1", "model": "vicuna-13b", "turn": 1, "language": "English",
                        "conversation": [{"content": "Hi there", "role": "user"},
                                         {"content": "Hello!", "role": "assistant"}]}],
     "sharegpt", [("Hi there", "Hello!")]),
    ("MT-Bench", [{"question_id": 81, "category": "writing", "turns": ["Compose a travel blog post about Hawaii.",
                                                                        "Rewrite it: start every sentence with A."]},
                  {"question_id": 111, "category": "math", "turns": ["The vertices of a triangle are at (0, 0), "
                                                                      "(-1, 1) and (3, 3). What is its area?",
                                                                      "What is the area of its circumcircle?"],
                   "reference": ["Area is 3", "5pi"]}],
     "turns", [("Compose a travel blog post about Hawaii.", None),
               ("The vertices of a triangle are at (0, 0), (-1, 1) and (3, 3). What is its area?", "Area is 3")]),
]


@pytest.mark.parametrize("container", ["lines", "array"])
@pytest.mark.parametrize("name, records, fmt, expected", DATASET_RECORDS, ids=[d[0] for d in DATASET_RECORDS])
def test_records_of_published_datasets_read_with_their_prompt_field_and_answer(tmp_path, name, records, fmt,
                                                                              expected, container):
    """GSM8K's question/answer, MMLU's, a corpus's text and a plain list of prompts were each refused ("missing
    field: "prompt" or "messages""), UltraChat's prompt beside its messages too, LMSYS-Chat-1M's conversation of
    role/content turns taken for ms-swift's pairs; Dolly's context was dropped; MT-Bench's turns refused."""
    path = tmp_path / ("data.jsonl" if container == "lines" else "data.json")
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n" if container == "lines" else json.dumps(records))
    assert detect_format(path) == fmt
    loader = PromptLoader(path, fmt)
    results = loader.read_all()
    assert loader.problems == []
    assert [(p.preview(), p.reference) for p in results.prompts] == expected
    if name == "OpenOrca":
        assert results.prompts[0].messages[0] == Message("system", "You are a helpful assistant.")


def test_a_named_prompt_field_is_read_and_a_missing_one_names_the_fields_there_are(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [{"question": "Who?", "hint": "a name", "answer": "Bob"},
                                                       {"question": "Where?", "answer": "here"}]) + "\n")
    loader = PromptLoader(path, "field", "hint")
    results = loader.read_all()
    assert [(p.preview(), p.reference) for p in results.prompts] == [("a name", "Bob")]
    assert [str(p) for p in loader.problems] == [
        'line 2: missing field: "hint" (the fields that hold text: question, answer); choose the prompt field in '
        "Open prompt file…"]
    loader = PromptLoader(path, "jsonl")
    loader.read_all()
    assert "the record looks like Records: a prompt field you name" in str(loader.problems[0])


def test_the_open_dialog_offers_a_record_s_text_fields_and_previews_the_one_chosen(qtbot, tmp_path):
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps({"id": 7, "answer": "#### 48", "question": "How many clips?"}) + "\n")
    dialog = open_dialog(qtbot, str(path))
    assert dialog.chosen() == ("field", "question") and dialog.column.isEnabled()
    assert [dialog.column.itemText(i) for i in range(dialog.column.count())] == ["question", "answer"]
    assert dialog.preview.text() == "Asks: How many clips?\nReference: #### 48"
    dialog.column.setCurrentText("answer")
    looked(qtbot, dialog)
    assert dialog.chosen() == ("field", "answer") and dialog.preview.text().startswith("Asks: #### 48")
    dialog.format.setCurrentIndex(dialog.format.findData("jsonl"))
    looked(qtbot, dialog)
    assert not dialog.column.isEnabled() and dialog.column.currentText() == ""
    dialog.format.setCurrentIndex(dialog.format.findData("field"))
    looked(qtbot, dialog)
    assert dialog.chosen() == ("field", "answer"), "the field chosen comes back with its format"
