"""Reading one discovered file for the index, refusing content that must not be indexed."""

from __future__ import annotations

import os
import re
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path

from ..base.handoff_schema import is_handoff_text
from ..text.secrets import is_secret_name, redact
from .results import (
    REASON_BINARY,
    REASON_CREDENTIALS,
    REASON_HANDOFF,
    REASON_PRIVATE_KEY,
    REASON_SECRET,
    REASON_TOO_LARGE,
    FileEntry,
)

_SNIFF_BYTES = 8192


@dataclass
class Loaded:
    """A file read for the index: its text (credential lines redacted) or why not.

    ``text`` is None when the file is refused, ``reason`` then says why (see
    :func:`read_text`); ``redacted`` are the 1-based numbers of the lines
    :func:`core.text.secrets.redact` replaced.
    """

    text: str | None
    reason: str = ""
    redacted: list[int] = field(default_factory=list)


def load_text(root: Path | str, entry_or_path: FileEntry | str, max_bytes: int = 1 << 20) -> Loaded:
    """Read one discovered file as :func:`read_text` does, and say which lines were redacted."""
    rel = entry_or_path.path if isinstance(entry_or_path, FileEntry) else entry_or_path
    path = os.path.join(os.fspath(root), rel)
    # O_NONBLOCK: if the path has been replaced by a FIFO, open must not hang.
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return Loaded(None, "vanished")
    except OSError:
        return Loaded(None, "unreadable")
    try:
        with open(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat_mod.S_ISREG(st.st_mode):
                return Loaded(None, "unreadable")
            if st.st_size > max_bytes:
                return Loaded(None, REASON_TOO_LARGE)
            data = fh.read(max_bytes + 1)
    except OSError:
        return Loaded(None, "unreadable")
    if len(data) > max_bytes:
        return Loaded(None, REASON_TOO_LARGE)
    if data.find(b"\0", 0, _SNIFF_BYTES) != -1:
        return Loaded(None, REASON_BINARY)
    if is_secret_name(os.path.basename(rel)):
        return Loaded(None, REASON_SECRET)  # discovery never lists these; nor is one read by name
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if is_handoff_text(text):
        # ranklens's own export (under any name): indexed, it would answer the next question
        # with the last one's hits.
        return Loaded(None, REASON_HANDOFF)
    clean = redact(text, rel)
    if clean is text:
        return Loaded(text)
    before, after = text.split("\n"), clean.split("\n")
    redacted = [n for n, (old, new) in enumerate(zip(before, after), start=1) if old != new]
    gone = set(redacted)
    rest = (line for n, line in enumerate(before, start=1) if n not in gone)
    if not any(_SEARCHABLE.search(line) for line in rest):
        # Nothing but credentials: a key file, or a token pasted alone.
        return Loaded(None, REASON_PRIVATE_KEY if _is_key(text) else REASON_CREDENTIALS, redacted)
    return Loaded(clean, "", redacted)


# A letter or digit: a file whose lines outside its credentials hold none has nothing to search.
_SEARCHABLE = re.compile(r"[^\W_]")


def _is_key(text: str) -> bool:
    return "PRIVATE KEY" in text or "PuTTY-User-Key-File-" in text


def read_text(root: Path | str, entry_or_path: FileEntry | str, max_bytes: int = 1 << 20) -> tuple[str | None, str]:
    """Read one discovered file as text, refusing content that must not be indexed.

    Parameters
    ----------
    root : Path or str
        The root the path is relative to.
    entry_or_path : FileEntry or str
        A discovered entry or a POSIX path relative to ``root``.
    max_bytes : int, optional
        Files larger than this are refused (checked again: files grow).

    Returns
    -------
    tuple of (str or None, str)
        ``(text, "")`` on success: decoded as UTF-8 with invalid bytes replaced, a
        leading BOM removed, CRLF/CR line ends turned into LF, and every line holding a
        credential (a private-key block, a token in a well-known format) replaced by
        :data:`core.text.secrets.MARKER` (:func:`core.text.secrets.redact`). Otherwise
        ``(None, reason)`` with reason ``"binary"`` (NUL byte in the first 8 KiB),
        ``"private key"`` (nothing but private-key blocks: PEM/OpenSSH/PGP/PuTTY),
        ``"credentials only"`` (nothing but lines holding tokens), ``"ranklens handoff"`` (a
        handoff document ranklens wrote, recognised by its content), ``"secret"`` (a secret
        file by name), ``"too large"``, ``"vanished"`` or ``"unreadable"``.
    """
    loaded = load_text(root, entry_or_path, max_bytes)
    return loaded.text, loaded.reason
