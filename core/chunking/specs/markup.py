"""Markdown: every section (a heading and what follows it, nested by level) is a chunk of kind
``section``; its heading is the name and its first line the signature.
"""

from __future__ import annotations

from .base import SECTION, Spec

SPECS: dict[str, Spec] = {
    "markdown": Spec(defs=("section",), line_comments=(), block_comment=None, kind=SECTION),
}
