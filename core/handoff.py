"""The JSON envelope shared by ``ranklens query --json``, ``--output`` and the TUI's export.

A coding agent consumes it: every hit says where to look (``path:start-end``), why (score,
agreement, confidence, provenance, per-arm contributions) and, in a handoff, the sha256 of the
span's text at export time so the agent can tell whether the file changed since (the text as
indexed: a line holding a credential is hashed as its redaction marker, see
:func:`core.secrets.redact`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .atomic import atomic_write
from .secrets import redact
from .types import ConsolidatedHit

#: ``schema_version`` of every envelope: bumped when a field changes meaning or goes away
#: (adding one does not bump it). The format is ``core/schemas/handoff.schema.json``.
ENVELOPE_VERSION = 1
SCHEMA_FILE = Path(__file__).with_name("schemas") / "handoff.schema.json"


def span_lines(text: str, start_line: int, end_line: int) -> str:
    """Lines ``start_line..end_line`` (1-based, inclusive) of a file's text, joined by ``\\n``.

    ``text`` has its line ends normalised already (as :func:`span_text` and
    :func:`core.discovery.read_text` both do): this cut is what every span hash is taken of.
    """
    return "\n".join(text.split("\n")[start_line - 1 : end_line])


def text_sha256(text: str) -> str:
    """The hash a handoff records for a span: sha256 of its text (:func:`span_lines`) as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def span_text(root: Path, path: str, start_line: int, end_line: int) -> str | None:
    """Lines ``start_line..end_line`` of a file as they are on disk now (None if unreadable).

    Decoded as the index reads files: UTF-8 with bad bytes replaced, CRLF/CR made LF, a
    leading byte-order mark dropped and lines holding a credential redacted
    (:func:`core.secrets.redact`), so the lines are the ones the index numbered.
    """
    try:
        with open(Path(root) / path, encoding="utf-8", errors="replace", newline="") as fh:
            text = fh.read().replace("\r\n", "\n").replace("\r", "\n")
    except OSError:
        return None
    return span_lines(redact(text.removeprefix("\ufeff"), path), start_line, end_line)


def span_sha256(root: Path, hit: ConsolidatedHit) -> str | None:
    """The sha256 of the span's text as :func:`span_text` gives it: a credential never enters
    an export, not even hashed (a weak password could be guessed back from its hash)."""
    text = span_text(root, hit.path, hit.start_line, hit.end_line)
    return None if text is None else text_sha256(text)


def envelope(
    *,
    query: str,
    mode: str,
    retrievers: Iterable[str],
    skipped: Iterable[tuple[str, str]],
    weights: Mapping[str, float],
    k: float,
    hits: Iterable[ConsolidatedHit],
    root: Path | None = None,
    with_hashes: bool = False,
    priors: bool | None = None,
    roots: Mapping[str, Path | None] | None = None,
) -> dict:
    """Build the envelope; ``with_hashes`` adds each span's current ``sha256`` (needs ``root``;
    a hit of a shared store's repository is read under ``roots[hit.repo]``, none when that
    repository is not on this machine).

    ``priors`` (when given) records whether the code-aware priors re-scored the hits; each
    hit carries its own ``fused_score`` and ``priors`` either way.
    """
    results = []
    for hit in hits:
        item = hit.to_dict()
        if with_hashes:
            where = roots.get(hit.repo, root) if roots and hit.repo else root
            item["sha256"] = span_sha256(where, hit) if where is not None else None
        results.append(item)
    out = {
        "schema_version": ENVELOPE_VERSION,
        "query": query,
        "mode": mode,
        "retrievers": list(retrievers),
        "skipped": [{"name": n, "reason": r} for n, r in skipped],
        "weights": dict(weights),
        "k": k,
    }
    if priors is not None:
        out["priors"] = priors
    out["results"] = results
    if root is not None:
        out["root"] = str(root)
    return out


def write_text_atomic(path: Path | str, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder, fsync and ``os.replace``.

    Readers see the old file or the new one, never half of one. Raises OSError (unwritable
    folder, missing parent …) with nothing left behind.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory")
    with atomic_write(target, "w", encoding="utf-8") as fh:
        fh.write(text)
    return target


def write_json_atomic(path: Path | str, data: object) -> Path:
    """Write ``data`` as indented JSON with :func:`write_text_atomic`."""
    return write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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


def default_handoff_path(root: Path | str) -> Path:
    """Where the terminal UI's export writes by default: ``handoffs/<root's name>.json`` in the
    user cache folder (beside the indexes, ``RANKLENS_CACHE_DIR`` moves it), outside every
    repository, so an export is never indexed, nor left in a work tree."""
    from .store import cache_root

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(os.path.realpath(root)).name or "root")[:40]
    return cache_root() / "handoffs" / f"{name}.json"
