"""Datasets into the batch pane, without an engine: alpaca, ShareGPT and ms-swift's formats from the files
their projects publish (tests/data/datasets/SOURCES.md names each), in a JSON array, JSON lines, Parquet,
Arrow and datasets' save_to_disk folders; the format detected and overridable; the record's own answer
kept as the reference, in the table and the exports; bad records named and the rest kept. Each expected
value is written from the sample file itself."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from batch_files import looked, open_dialog
from workbench.batch.export import export_rows
from workbench.batch.formats import detect_container, detect_format, parse_prompts, split_row_limit
from workbench.batch.loader import PromptLoader
from workbench.batch.prompt_file import LineProblem
from workbench.batch.results import DONE
from workbench.engine.backend import Message

DATA = Path(__file__).parent / "data" / "datasets"
ALPACA = DATA / "alpaca_en_demo-first20.json"


def _read(path, fmt=None, **kwargs):
    items = list(parse_prompts(path, fmt or detect_format(path), **kwargs))
    return [i for i in items if not isinstance(i, LineProblem)], [i for i in items if isinstance(i, LineProblem)]


def _alpaca_records() -> list[dict]:
    return json.loads(ALPACA.read_text(encoding="utf-8"))


def test_an_alpaca_json_array_is_detected_and_read_with_its_answers_as_references():
    assert (detect_container(ALPACA), detect_format(ALPACA)) == ("array", "alpaca")
    prompts, problems = _read(ALPACA)
    assert not problems and len(prompts) == 20
    first = prompts[0]
    assert first.line_no == 2 and first.messages == (Message("user", "Describe a process of making crepes."),)
    assert first.reference.startswith("Making crepes is an easy and delicious process!")
    # record 6 has an input: ms-swift and LLaMA-Factory ask f"{instruction}\n{input}"
    sixth = prompts[5]
    assert sixth.messages == (Message("user", "Given the parameters of a triangle, find out its perimeter.\n"
                                              "Side 1 = 4\nSide 2 = 6\nSide 3 = 8"),)
    assert sixth.reference.startswith("The perimeter of a triangle is the sum of the lengths of its sides.")
    assert prompts[-1].messages[-1].content == "Explain what a circuit breaker is."


def test_sharegpt_with_tool_turns_reads_the_plain_conversations_and_names_the_others():
    path = DATA / "glaive_toolcall_en_demo-first10.json"
    assert detect_format(path) == "sharegpt"
    prompts, problems = _read(path)
    # records 1, 4 and 8 (lines 2, 121, 237) hold function_call / observation turns
    assert [(p.line_no, p.reason.split(":")[0]) for p in problems] == [
        (2, "turn 4 is a function_call turn"), (121, "turn 2 is a function_call turn"),
        (237, "turn 2 is a function_call turn")]
    assert len(prompts) == 7
    second = prompts[0]
    assert second.line_no == 39 and len(second.messages) == 9  # five human turns, four answers before the last
    assert second.messages[0] == Message("user", 'Write a definition of "photoshop".')
    assert second.messages[-1].content.startswith("What is the difference between AR and VR")
    assert second.reference.startswith("Augmented reality (AR) and virtual reality (VR)")


def test_ms_swift_formats_from_its_custom_dataset_page():
    cases = {
        "swift-messages.jsonl": ("jsonl", [
            ((Message("system", "You are a useful and harmless assistant"),
              Message("user", "Tell me tomorrow's weather")), "Tomorrow's weather will be sunny"),
            ((Message("system", "You are a useful and harmless math calculator"), Message("user", "What is 1 + 1?"),
              Message("assistant", "It equals 2"), Message("user", "What about adding 1?")), "It equals 3")]),
        "swift-sharegpt.jsonl": ("sharegpt", [
            ((Message("system", "<system>"), Message("user", "<query1>"), Message("assistant", "<response1>"),
              Message("user", "<query2>")), "<response2>")]),
        "swift-query-response.jsonl": ("swift", [
            ((Message("system", "<system>"), Message("user", "<query1>"), Message("assistant", "<response1>"),
              Message("user", "<query2>")), "<response2>")]),
        "swift-alpaca.jsonl": ("alpaca", [
            ((Message("system", "<system>"), Message("user", "<query-inst>\n<query-input>")), "<response>")]),
    }
    for name, (fmt, expected) in cases.items():
        path = DATA / name
        assert (detect_container(path), detect_format(path)) == ("lines", fmt), name
        prompts, problems = _read(path)
        assert not problems, name
        assert [(p.messages, p.reference) for p in prompts] == expected, name


def test_text_parts_written_with_value_as_llama_factory_writes_them():
    prompts, problems = _read(DATA / "v1_sft_demo-first10.jsonl")
    assert not problems and len(prompts) == 10
    assert prompts[0].messages == (Message("user", "hi"),)
    assert prompts[0].reference == ("Hello! I am {{name}}, an AI assistant developed by {{author}}. How can I assist "
                                    "you today?")


def test_records_whose_images_are_missing_are_named_and_the_rest_kept(tmp_path):
    """mllm_demo.json without its mllm_demo_data folder, and ms-swift's image_url sample whose data: URL is
    a placeholder: each record names its image and the fix (tests/test_batch_images.py reads them whole)."""
    prompts, problems = _read(DATA / "mllm_demo.json")
    assert not prompts and len(problems) == 6
    assert all(p.reason.startswith("image 1 (mllm_demo_data/") and "no file at" in p.reason for p in problems)
    prompts, problems = _read(DATA / "swift-image-url.jsonl")
    assert not prompts and "image 1 (data:image/png;base64,… (16 characters)): the data: URL says base64 but its " \
        "data is not base64" in problems[0].reason
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([(DATA / "swift-image-url.jsonl").read_text().strip(),
                                json.dumps({"prompt": "still here"})]) + "\n")
    prompts, problems = _read(mixed)
    assert [p.prompt for p in prompts] == ["still here"] and problems[0].line_no == 1


def test_the_format_can_be_overridden_and_a_wrong_choice_says_which_fits():
    prompts, problems = _read(ALPACA, "sharegpt")
    assert not prompts and len(problems) == 20
    assert "the record looks like Alpaca: instruction, input, output (Dolly's context, response): choose that format" \
        in problems[0].reason
    prompts, problems = _read(DATA / "swift-sharegpt.jsonl", "swift")
    assert 'missing field: "query"; the record looks like ShareGPT' in problems[0].reason


@pytest.fixture(scope="module")
def alpaca_tables(tmp_path_factory):
    """The alpaca sample as Parquet, an Arrow file, a save_to_disk folder and a DatasetDict folder, each
    written by its own library (pyarrow; datasets)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("tables")
    table = pa.Table.from_pylist(_alpaca_records())
    pq.write_table(table, folder / "alpaca.parquet", row_group_size=7)
    with pa.ipc.new_file(str(folder / "alpaca.arrow"), table.schema) as writer:
        writer.write_table(table, max_chunksize=6)
    dataset = datasets.Dataset.from_list(_alpaca_records())
    dataset.save_to_disk(str(folder / "saved"))
    datasets.DatasetDict({"train": dataset, "test": dataset.select(range(3))}).save_to_disk(str(folder / "dict"))
    return folder


def test_parquet_arrow_and_save_to_disk_folders_read_the_same_records(alpaca_tables):
    expected = [(p.messages, p.reference) for p in _read(ALPACA)[0]]
    for name, container in (("alpaca.parquet", "parquet"), ("alpaca.arrow", "arrow"), ("saved", "dataset"),
                            ("saved/state.json", "dataset")):
        path = alpaca_tables / name
        assert (detect_container(path), detect_format(path)) == (container, "alpaca"), name
        prompts, problems = _read(path)
        assert not problems, name
        assert [(p.messages, p.reference) for p in prompts] == expected, name
        assert [p.line_no for p in prompts] == list(range(1, 21)), "a table's prompts are numbered by row"


def test_a_dataset_dict_folder_reads_its_test_split_first_or_the_one_chosen(alpaca_tables):
    loader = PromptLoader(alpaca_tables / "dict", "alpaca")
    assert loader.read_all().num_rows == 3 and loader.results.unit == "row"
    assert loader.summary() == "3 prompts read from dict (its test split)."
    train = PromptLoader(alpaca_tables / "dict", "alpaca", split="train")
    assert train.read_all().num_rows == 20


def test_a_table_is_read_a_batch_at_a_time(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"instruction": f"question {i}", "input": "", "output": f"answer {i}"} for i in range(6000)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "big.parquet", row_group_size=1000)
    loader = PromptLoader(tmp_path / "big.parquet", "alpaca")
    assert loader.read(1500, max_s=60) and 0 < loader.fraction < 1 and loader.results.num_rows == 1500
    assert loader.read_all().num_rows == 6000 and loader.fraction == 1.0
    assert loader.results.prompts[5999].reference == "answer 5999"


def test_a_broken_table_file_or_folder_is_named_with_the_fix(tmp_path):
    fake = tmp_path / "fake.parquet"
    fake.write_bytes(b"PAR1 not really")
    loader = PromptLoader(fake, "alpaca")
    loader.read_all()
    assert loader.problems[0].fatal and "fake.parquet cannot be read as Parquet" in str(loader.problems[0])
    folder = tmp_path / "not-saved"
    folder.mkdir()
    from workbench.batch.table_files import TableError

    with pytest.raises(TableError, match="has no state.json.*save_to_disk"):
        PromptLoader(folder, "alpaca")


def test_a_json_array_broken_midway_keeps_the_records_before_it(tmp_path):
    records = _alpaca_records()[:3]
    text = json.dumps(records, indent=2)
    broken = tmp_path / "broken.json"
    broken.write_text(text[: text.rindex("{")] + '{"instruction": "cut off", "output": }\n]')
    prompts, problems = _read(broken, "alpaca")
    assert len(prompts) == 2 and problems[0].fatal and "broken JSON" in problems[0].reason
    assert problems[0].line_no == text[: text.rindex("{")].count("\n") + 1
    unclosed = tmp_path / "unclosed.json"
    unclosed.write_text(text[:-2])
    prompts, problems = _read(unclosed, "alpaca")
    assert len(prompts) == 3 and "the file ends before the array is closed" in problems[0].reason
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.rindex('"output"') + 12])
    prompts, problems = _read(cut, "alpaca")
    assert len(prompts) == 2 and "the file ends inside a record" in problems[0].reason


def test_a_record_s_own_sampling_applies_and_a_bad_value_is_reported(tmp_path):
    path = tmp_path / "own.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (
        {"prompt": "short", "max_tokens": 7, "temperature": 0.5},
        {"prompt": "negative", "max_tokens": -5},
        {"prompt": "hot", "temperature": "hot"},
        {"instruction": "ok", "output": "fine", "top_p": 1.5},
        {"prompt": "last", "seed": 3})) + "\n")
    prompts, problems = _read(path, "jsonl")
    assert [(p.prompt, p.sampling) for p in prompts] == [("short", (("max_tokens", 7), ("temperature", 0.5))),
                                                         ("last", (("seed", 3),))]
    assert [(p.line_no, p.reason) for p in problems] == [
        (2, "max_tokens must be 1 or more, got -5"), (3, 'temperature must be a number, got "hot"'),
        (4, 'missing field: "prompt" or "messages"; the record looks like Alpaca: instruction, input, output '
            "(Dolly's context, response): choose that format")]
    prompts, problems = _read(path, "alpaca")
    assert [p.reason for p in problems][-1].startswith('missing field: "instruction"')
    assert "top_p must be above 0 and at most 1, got 1.5" in [p.reason for p in problems]


def test_a_csv_with_an_unclosed_quote_is_reported_and_the_rows_after_it_kept(tmp_path):
    path = tmp_path / "quotes.csv"
    path.write_text('id,prompt\n1,"fine"\n2,"never closed\n3,after it\n4,"two\nlines"\n')
    prompts, problems = _read(path, "csv", column="prompt")
    assert [(p.line_no, p.prompt) for p in prompts] == [(2, "fine"), (4, "after it"), (5, "two\nlines")]
    assert [p.line_no for p in problems] == [3] and "not closed" in problems[0].reason
    at_end = tmp_path / "end.csv"
    at_end.write_text('id,prompt\n1,fine\n2,"open to the end\n3,lost?\n')
    prompts, problems = _read(at_end, "csv", column="prompt")
    assert [p.prompt for p in prompts] == ["fine", "lost?"] and [p.line_no for p in problems] == [3]
    tsv = tmp_path / "tabs.tsv"
    tsv.write_text("id\tprompt\n1\tone, with a comma\n")
    assert [p.prompt for p in _read(tsv, "csv", column="prompt")[0]] == ["one, with a comma"]


def test_dataset_hash_n_reads_the_first_n_rows(tmp_path):
    assert split_row_limit(f"{ALPACA}#5") == (str(ALPACA), 5)
    assert split_row_limit("data.jsonl") == ("data.jsonl", None)
    named = tmp_path / "odd#2"
    named.write_text("a\n")
    assert split_row_limit(str(named)) == (str(named), None), "a file named with a # is taken as it is"
    loader = PromptLoader(ALPACA, "alpaca", max_rows=5)
    assert loader.read_all().num_rows == 5 and loader.summary() == f"First 5 prompts read from {ALPACA.name}."


def test_references_go_to_the_jsonl_and_csv_exports_not_to_vllm_s_output(tmp_path):
    import csv

    loader = PromptLoader(ALPACA, "alpaca", max_rows=2)
    results = loader.read_all()
    results.add_text(0, "Whisk flour and eggs.")
    results.finish(0, DONE, "stop", None)
    list(export_rows(results, tmp_path / "out.jsonl", "jsonl"))
    first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert first["text"] == "Whisk flour and eggs." and first["reference"].startswith("Making crepes is an easy")
    list(export_rows(results, tmp_path / "out.csv", "csv"))
    row = next(csv.DictReader((tmp_path / "out.csv").open(newline="", encoding="utf-8-sig")))
    assert row["reference"].startswith("Making crepes") and row["text"] == "Whisk flour and eggs."
    list(export_rows(results, tmp_path / "out-openai.jsonl", "openai"))
    assert "reference" not in (tmp_path / "out-openai.jsonl").read_text()


def test_the_open_dialog_shows_the_file_the_detected_format_and_the_first_record(qtbot, alpaca_tables):
    dialog = open_dialog(qtbot, str(ALPACA))
    assert dialog.findChild(object, "batchContainer").text() == "a JSON array of records"
    assert dialog.chosen() == ("alpaca", None) and "(detected)" in dialog.format.currentText()
    assert dialog.preview.text().startswith("Asks: Describe a process of making crepes.")
    assert "Reference: Making crepes is an easy" in dialog.preview.text()
    dialog.format.setCurrentIndex(dialog.format.findData("sharegpt"))
    looked(qtbot, dialog)
    assert "choose that format" in dialog.preview.text()
    folder = open_dialog(qtbot, str(alpaca_tables / "dict"), max_rows=2000)
    assert [folder.split_choice.itemText(i) for i in range(folder.split_choice.count())] == ["train", "test"]
    assert folder.max_rows() == 2000 and folder.chosen()[0] == "alpaca"


def test_the_table_shows_the_reference_column_only_for_records_with_answers(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from workbench.ui.batch_table import REFERENCE_COLUMN, BatchTableModel

    results = PromptLoader(ALPACA, "alpaca").read_all()
    model = BatchTableModel(results)
    assert model.headerData(REFERENCE_COLUMN, Qt.Horizontal) == "Reference"
    assert model.display(0, "reference").startswith("Making crepes is an easy")
    assert results.num_references == 20
    plain = tmp_path / "plain.txt"
    plain.write_text("one\ntwo\n")
    assert PromptLoader(plain, "text").read_all().num_references == 0
