"""Image batches through the real window and the real vLLM CPU engine on the vision demo model (Idefics3):
20 image lines in every form, three of them bad, give 17 results with their image token counts and three
named problems; an http(s) image is fetched from a real server on loopback when its row is sent."""
from __future__ import annotations

import pytest

from batch_images import data_url, image_bytes, image_line, serving, truncated_image, write_image
from chat_driver import ENGINE_START_TIMEOUT_MS
from test_batch_engine import open_and_wait, run_and_wait, skip_malformed
from workbench.batch.results import DONE

pytestmark = pytest.mark.slow  # the real engine, shared with the other slow tests

SIZE = (64, 48)  # every picture the same size: the processor gives each the same number of tokens


@pytest.fixture
def image_server(tmp_path):
    """A real http.server on loopback serving ``tmp_path / "served"``."""
    folder = tmp_path / "served"
    folder.mkdir()
    with serving(folder) as (base_url, requested):
        yield base_url, folder, requested


@pytest.fixture
def vl_window(shared_window, qtbot):
    """The shared window with its engine on the vision demo model (the next test's ``window`` starts the
    text demo again)."""
    from workbench.app import demo_vl_engine_config

    window = shared_window
    config = demo_vl_engine_config()
    if window.model.config != config or window.model.engine.state not in ("ready", "starting"):
        start_id = window.start_engine(config)
    else:
        start_id = window.model.engine.start_id
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    window.batch.confirm = lambda *_: True  # an earlier test's batch run may leave the pane: yes
    return window


def twenty_lines(folder, base_url: str) -> list[str]:
    """17 good lines (each form, one to three images a line) and 3 bad ones (lines 5, 11 and 16)."""
    for number, suffix in enumerate((".png", ".jpg", ".webp", ".gif")):
        write_image(folder / "pictures", f"p{number}{suffix}", number, SIZE)
    write_image(folder / "served", "online.png", 9, SIZE)
    truncated_image(folder, "cut.png")
    data = data_url(image_bytes(".png", SIZE, 7))
    webp = (folder / "pictures" / "p2.webp").as_uri()
    forms = [("pictures/p0.png",), ("pictures/p1.jpg",), (webp,), ("pictures/p3.gif",)]
    lines = []
    for number in range(1, 21):
        if number == 5:
            lines.append(image_line(f"row-{number}", "Where is it?", "pictures/missing.png"))
        elif number == 11:
            lines.append(image_line(f"row-{number}", "Broken?", "data:image/png;base64,not*base64*at*all"))
        elif number == 16:
            lines.append(image_line(f"row-{number}", "Cut short?", "cut.png"))
        elif number == 8:
            lines.append(image_line(f"row-{number}", "From the web?", f"{base_url}/online.png"))
        elif number in (3, 13):
            lines.append(image_line(f"row-{number}", "Compare them.", "pictures/p0.png", data, "pictures/p1.jpg"))
        elif number == 19:
            lines.append(image_line(f"row-{number}", "Inline?", data))
        else:
            lines.append(image_line(f"row-{number}", f"What is in picture {number}?", *forms[number % 4]))
    return lines


def test_twenty_image_lines_three_bad_run_with_image_token_counts(vl_window, qtbot, tmp_path, image_server):
    base_url, served, requested = image_server
    pane = vl_window.batch
    vl_window.panes.setCurrentWidget(pane)
    path = tmp_path / "images.jsonl"
    path.write_text("\n".join(twenty_lines(tmp_path, base_url)) + "\n")
    open_and_wait(pane, qtbot, path, "openai")
    listed = skip_malformed(pane, qtbot, "Line 5")
    assert [text.split(":")[0] for text in listed] == ["line 5", "line 11", "line 16"], listed
    assert "image 1 (pictures/missing.png): no file at" in listed[0] and "Check the path" in listed[0]
    assert "not base64" in listed[1] and "truncated" in listed[2]
    assert requested == [], "an http(s) image is fetched when its row is sent, not when the file is read"
    assert not pane.table.isColumnHidden(3) and pane.table_model.display(2, "images").startswith("3 · p0.png")

    results = run_and_wait(pane, qtbot, max_tokens=4, max_in_flight=6).results
    assert results.num_rows == 17 and list(results.column("status")) == [DONE] * 17, results.errors
    assert requested == ["/online.png"]
    counts = {p.custom_id: len(p.images) for p in results.prompts}
    tokens = {p.custom_id: results.value("image_tokens", row) for row, p in enumerate(results.prompts)}
    per_image = tokens["row-1"]
    assert per_image > 0 and all(tokens[c] == per_image * counts[c] for c in counts), tokens
    assert all(results.value("prompt_tokens", row) > tokens[p.custom_id] for row, p in enumerate(results.prompts))
    pane.table.selectRow(2)
    detail = pane.detail.toPlainText()
    assert f"Images (3, {3 * per_image:,} image tokens):" in detail and "1. p0.png (64 × 48 PNG)" in detail
