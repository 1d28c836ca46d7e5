"""The JSON envelope shared by ``ranklens query --json``, ``--output`` and the TUI's export.

A coding agent consumes it: every hit says where to look (``path:start-end``), why (score,
agreement, confidence, provenance, per-arm contributions) and, in a handoff, the sha256 of the
span's text at export time so the agent can tell whether the file changed since (the text as
indexed: a line holding a credential is hashed as its redaction marker, see
:func:`core.text.secrets.redact`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from .base.handoff_schema import ENVELOPE_VERSION
from .base.types import ConsolidatedHit
from .text.secrets import redact


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
    (:func:`core.text.secrets.redact`), so the lines are the ones the index numbered.
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
    reached: Mapping[str, dict] | None = None,
) -> dict:
    """Build the envelope; ``with_hashes`` adds each span's current ``sha256`` (needs ``root``;
    a hit of a shared store's repository is read under ``roots[hit.repo]``, none when that
    repository is not on this machine).

    ``priors`` (when given) records whether the code-aware priors re-scored the hits; each
    hit carries its own ``fused_score`` and ``priors`` either way. ``reached`` (by docid): how
    the terminal UI's walk reached each span (:func:`core.walk.reached_record`), added to it.
    """
    results = []
    for hit in hits:
        item = hit.to_dict()
        if with_hashes:
            where = roots.get(hit.repo, root) if roots and hit.repo else root
            item["sha256"] = span_sha256(where, hit) if where is not None else None
        if reached and hit.docid in reached:
            item["reached"] = dict(reached[hit.docid])
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


def default_handoff_path(root: Path | str) -> Path:
    """Where the terminal UI's export writes by default: ``handoffs/<root's name>.json`` in the
    user cache folder (beside the indexes, ``RANKLENS_CACHE_DIR`` moves it), outside every
    repository, so an export is never indexed, nor left in a work tree."""
    from .storage.store import cache_root

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(os.path.realpath(root)).name or "root")[:40]
    return cache_root() / "handoffs" / f"{name}.json"
