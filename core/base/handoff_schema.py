"""The published handoff format: its version, its JSON Schema and the check against it.

The envelope itself is built by :mod:`core.handoff`; this is what reads one back (an agent's
document, a file met while indexing: :func:`is_handoff_text`), kept apart so that discovery can
refuse an export without importing the envelope's builders.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

#: ``schema_version`` of every envelope: bumped when a field changes meaning or goes away
#: (adding one does not bump it). The format is ``core/schemas/handoff.schema.json``.
ENVELOPE_VERSION = 1
SCHEMA_FILE = Path(__file__).parents[1] / "schemas" / "handoff.schema.json"


class HandoffError(ValueError):
    """A document is not a handoff (one line: where and what)."""


@functools.cache
def handoff_schema() -> dict:
    """The published JSON Schema of the envelope (``core/schemas/handoff.schema.json``)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def validate_handoff(document: object) -> dict:
    """``document`` if it is a handoff by the schema, else :class:`HandoffError` naming the
    first problem (``results/0/start_line: 'x' is not of type 'integer'``).

    A document written before ``schema_version`` existed is taken as version 1, which it is.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    if isinstance(document, dict) and "schema_version" not in document:
        document = {"schema_version": ENVELOPE_VERSION, **document}
    error = best_match(Draft202012Validator(handoff_schema()).iter_errors(document))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the document"
        raise HandoffError(f"not a ranklens handoff: {where}: {error.message}"[:300])
    return document


#: Keys every envelope holds, looked for in a file's text before it is parsed (a cheap sniff).
_SNIFF = ('"results"', '"retrievers"', '"query"')
_OPENS_OBJECT = re.compile(r"\s*\{")  # matched at the start: no copy of a large file's text


def is_handoff_text(text: str) -> bool:
    """Whether ``text`` is a handoff document by its content (whatever the file's name): a
    JSON object the published schema accepts. The index never holds one (:func:`core.discovery.
    load_text`): an export left in the repository would otherwise answer the next question with
    the last one's hits."""
    if not _OPENS_OBJECT.match(text) or not all(key in text for key in _SNIFF):
        return False
    try:
        document = json.loads(text)
    except ValueError:
        return False
    if not isinstance(document, dict):
        return False
    try:
        validate_handoff(document)
    except HandoffError:
        return False
    return True
