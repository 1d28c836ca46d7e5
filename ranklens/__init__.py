"""ranklens: explore a code repository with several retrievers at once.

One import package. ``ranklens.core`` is the engine (discovery, chunking, the retriever arms,
fusion and the ranking stage, the persistent index; it never imports Textual, the command
line or the MCP server), ``ranklens.tui`` the terminal UI, and the modules here the front
ends that compose them: :mod:`ranklens.cli` (the ``ranklens`` command, the composition root)
and :mod:`ranklens.mcp_server`.

In a source checkout the engine and the UI live in ``core/`` and ``tui/`` beside this folder
(the repository's layout); the wheel carries them inside it (``hatch_build.py``). Only then,
with no ``core/`` here, is the checkout's root added to this package's search path, so
``ranklens.core`` resolves to ``<checkout>/core``.
"""

from pathlib import Path as _Path

_here = _Path(__file__).resolve().parent
if not (_here / "core").is_dir() and (_here.parent / "core" / "__init__.py").is_file():
    __path__.append(str(_here.parent))

from .core import __version__  # noqa: E402  (the path above first)

#: A small repository in several languages, shipped as package data: what ``python3 start.py``
#: opens when it is not run inside a repository.
SAMPLE_REPO = _here / "sample_repo"

__all__ = ["SAMPLE_REPO", "__version__"]
