"""Image sources without an engine: each form a batch line names an image by is read, and each failure
names the image, its cause and its fix."""
from __future__ import annotations

import socket

import pytest
from batch_images import data_url, image_bytes, serving, truncated_image, write_image

from workbench.engine.image_sources import image_from_source
from workbench.engine.images import ImageProblem


def test_a_relative_path_is_read_from_the_files_folder_and_an_absolute_one_as_given(tmp_path):
    write_image(tmp_path / "pics", "cat.png", shade=1, size=(40, 30))
    relative = image_from_source("pics/cat.png", tmp_path, "line 1, image 1")
    absolute = image_from_source(str(tmp_path / "pics" / "cat.png"), "/elsewhere", "line 2, image 1")
    assert (relative.ref.width, relative.ref.height, relative.ref.mime) == (40, 30, "image/png")
    assert relative.ref.name == "line 1, image 1"
    assert absolute.data == relative.data and absolute.ref.sha256 == relative.ref.sha256


@pytest.mark.parametrize("suffix, mime", [(".jpg", "image/jpeg"), (".webp", "image/webp"), (".gif", "image/gif")])
def test_a_file_url_in_each_format(tmp_path, suffix, mime):
    path = write_image(tmp_path / "a folder", f"photo{suffix}", shade=2)
    image = image_from_source(path.as_uri(), "/unused", "photo")
    assert image.ref.mime == mime and image.data == path.read_bytes()


def test_a_missing_file_is_named_with_the_path_looked_at(tmp_path):
    with pytest.raises(ImageProblem) as caught:
        image_from_source("gone/dog.png", tmp_path, "line 3, image 1")
    message = str(caught.value)
    assert "line 3, image 1" in message and str(tmp_path / "gone" / "dog.png") in message
    assert "Check the path" in message


def test_a_data_url_in_base64_and_one_that_is_not(tmp_path):
    data = image_bytes(".png", (20, 10), 4)
    image = image_from_source(data_url(data), tmp_path, "inline")
    assert image.data == data and (image.ref.width, image.ref.height) == (20, 10)
    with pytest.raises(ImageProblem, match="not base64") as caught:
        image_from_source("data:image/png;base64,@@not*base64@@", tmp_path, "inline 2")
    assert "inline 2" in str(caught.value) and "base64 -w0" in str(caught.value)
    with pytest.raises(ImageProblem, match="no comma"):
        image_from_source("data:image/png;base64", tmp_path, "inline 3")


def test_bytes_that_are_not_a_whole_image_are_refused(tmp_path):
    (tmp_path / "notes.png").write_text("just text")
    with pytest.raises(ImageProblem, match="notes.png"):
        image_from_source("notes.png", tmp_path, "notes.png")
    truncated_image(tmp_path)
    with pytest.raises(ImageProblem, match="cut.png"):
        image_from_source("cut.png", tmp_path, "cut.png")


def test_an_http_url_from_a_loopback_server(tmp_path):
    path = write_image(tmp_path, "served.webp", shade=5)
    with serving(tmp_path) as (base, requested):
        image = image_from_source(f"{base}/served.webp", "/unused", "served")
        assert image.data == path.read_bytes() and image.ref.mime == "image/webp"
        with pytest.raises(ImageProblem, match="HTTP 404") as caught:
            image_from_source(f"{base}/missing.png", "/unused", "missing")
        assert f"{base}/missing.png" in str(caught.value) and "give its path" in str(caught.value)
    assert "/served.webp" in requested


def test_a_url_this_machine_cannot_reach_says_to_download_it():
    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/cat.png"
    with pytest.raises(ImageProblem) as caught:
        image_from_source(url, "/unused", "line 9, image 1")
    message = str(caught.value)
    assert url in message and "cannot be reached from this machine" in message
    assert "Download it and give its path" in message


def test_another_scheme_is_named_with_the_forms_that_are_read(tmp_path):
    with pytest.raises(ImageProblem, match=r"s3:// addresses are not read here"):
        image_from_source("s3://bucket/cat.png", tmp_path, "remote")
