"""What the in-file encoder reads of a question or a chunk: identifiers split into words.

A WordPiece vocabulary cuts ``parseHeaderValue`` or ``parse_header_value`` into pieces that
say little; split into ``parse header value`` they are the words a question uses. Runs of
white space (indentation) are one space: the tokenizer drops them anyway, and a chunk's
lines are read as one text. Shared by the trainer (``scripts/train_encoder.py``) and the
chunk step's encoder (:mod:`core.encoder`), so both read the same text. Standard library
only: the trainer's environment imports it without ranklens's dependencies.
"""

from __future__ import annotations

import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SNAKE = re.compile(r"(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9])")
_SPACE = re.compile(r"\s+")


def encoder_text(text: str) -> str:
    """``text`` with its identifiers split into words and its white space runs made one."""
    return _SPACE.sub(" ", _CAMEL.sub(" ", _SNAKE.sub(" ", text))).strip()
