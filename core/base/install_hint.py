"""The command that adds an extra to *this* installation of ranklens.

``pip install 'ranklens[deep]'`` only works where ranklens came from a package index. From a
checkout (``python3 start.py`` makes ``.venv`` with an editable install) the extra is added to
that checkout, from a path or wheel install to the same path, and under pipx or uv's tool
folders by their own command. Cheap: reads at most one small metadata file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

_PACKAGE = Path(__file__).resolve().parents[2]  # ranklens/ in a wheel, the checkout's root in a checkout


def _short(path: Path) -> str:
    """``path`` relative to the current directory when it lies under it, else absolute."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return str(path)
    return str(rel) if rel.parts else "."


def _python() -> str:
    # A relative ``.venv/bin/python`` runs as written: it holds a slash.
    return _short(Path(sys.executable))


def _source() -> tuple[str, bool] | None:
    """Where the installed distribution came from (a local path) and whether it is editable."""
    from importlib import metadata  # ~30 ms to import: only when a hint is asked for

    try:
        raw = metadata.distribution("ranklens").read_text("direct_url.json")
    except (metadata.PackageNotFoundError, OSError):
        return None
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    url = urlparse(str(info.get("url", "")))
    if url.scheme != "file":
        return None
    return unquote(url.path), bool((info.get("dir_info") or {}).get("editable"))


def pip_hint(extra: str) -> str:
    """The one command that installs ``ranklens[extra]`` the way this copy was installed."""
    if (_PACKAGE / "pyproject.toml").is_file() and (_PACKAGE / "core").is_dir():  # a checkout
        return f"{_python()} -m pip install -e '{_short(_PACKAGE)}[{extra}]'"
    source = _source()
    spec = f"{source[0]}[{extra}]" if source else f"ranklens[{extra}]"
    prefix = sys.prefix.replace(os.sep, "/")
    if "/pipx/venvs/" in prefix:
        return f"pipx install --force '{spec}'"
    if "/uv/tools/" in prefix:
        return f"uv tool install --force '{spec}'"
    return f"{_python()} -m pip install '{spec}'"
