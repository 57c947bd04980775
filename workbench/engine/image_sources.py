"""An image named by text, as batch files and datasets name them: a local path, a ``file://`` URL, a ``data:``
URL or an http(s) URL, read into an :class:`~workbench.engine.images.ImageInput`.

Every failure is an :class:`~workbench.engine.images.ImageProblem` whose message names the image, the cause
and the fix: a file that is missing (with the path looked at), a ``data:`` URL that is not base64, a URL this
machine cannot reach, bytes that are not an image or are cut short (:func:`~workbench.engine.images.read_image`).
No Qt, no vLLM.
"""
from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urlsplit

from workbench.engine.images import ImageInput, ImageProblem, read_image

FETCH_TIMEOUT_S = 10.0
MAX_FETCH_BYTES = 64 << 20  # an image this large is not a picture a model's processor takes


def image_from_source(text: str, base_dir: str | Path, name: str) -> ImageInput:
    """The image ``text`` names: a path (relative ones read from ``base_dir``), ``file://``, ``data:`` or
    http(s) URL. ``name``: what the image is called in messages and in the returned reference."""
    text = text.strip()
    scheme = urlsplit(text).scheme.lower() if "://" in text or text[:5].lower() == "data:" else ""
    if scheme == "data":
        return read_image(data_url_bytes(text, name), name)
    if scheme in ("http", "https"):
        return read_image(fetch_url(text, name), name)
    if scheme not in ("", "file") and len(scheme) > 1:  # a one-letter scheme is a Windows drive
        raise ImageProblem(f"{name}: {scheme}:// addresses are not read here; give a local path, a file://, "
                           "data: or http(s) URL.")
    path = source_path(text, base_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImageProblem(f"{name}: no file at {path}. Check the path (a relative path is read from "
                           f"{Path(base_dir)}), or put the image there.") from None
    except IsADirectoryError:
        raise ImageProblem(f"{name}: {path} is a folder, not an image file. Name the image file itself.") from None
    except OSError as exc:
        raise ImageProblem(f"{name}: {path} cannot be read ({exc.strerror or exc}). Check its permissions.") from None
    return read_image(data, name)


def source_path(text: str, base_dir: str | Path) -> Path:
    """The file a path or ``file://`` URL names; a relative path is read from ``base_dir``."""
    if text[:7].lower() == "file://":
        parts = urlsplit(text)
        remote = parts.netloc not in ("", "localhost")
        path = Path(unquote(f"//{parts.netloc}{parts.path}" if remote else parts.path))
    else:
        path = Path(os.path.expanduser(text))
    return path if path.is_absolute() else Path(base_dir) / path


def data_url_bytes(url: str, name: str) -> bytes:
    """The bytes of a ``data:`` URL: base64 (``;base64``), or percent-encoded where it does not say base64."""
    head, comma, body = url.partition(",")
    if not comma:
        raise ImageProblem(f"{name}: the data: URL has no comma before its data. Write "
                           "data:image/png;base64,<the image in base64>.")
    if not head.lower().endswith(";base64"):
        return unquote_to_bytes(body)
    compact = "".join(body.split())
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ImageProblem(f"{name}: the data: URL says base64 but its data is not base64 (characters outside "
                           "A–Z, a–z, 0–9, +, / and =). Encode the image file again, e.g. "
                           "base64 -w0 image.png.") from None


def fetch_url(url: str, name: str) -> bytes:
    """An http(s) URL's body, fetched with a timeout; ImageProblem where it cannot be had."""
    import httpx

    try:
        with httpx.stream("GET", url, timeout=FETCH_TIMEOUT_S, follow_redirects=True) as response:
            if response.status_code >= 400:
                raise ImageProblem(f"{name}: {url} answered HTTP {response.status_code} "
                                   f"{response.reason_phrase}. Check the URL, or download the image and give "
                                   "its path.")
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_FETCH_BYTES:
                    raise ImageProblem(f"{name}: {url} is larger than {MAX_FETCH_BYTES >> 20} MiB: not an image "
                                       "a model takes. Give a smaller image.")
            return bytes(data)
    except httpx.HTTPError as exc:
        raise ImageProblem(f"{name}: {url} cannot be reached from this machine ({type(exc).__name__}: {exc}). "
                           "Download it and give its path.") from None
