"""Atomic file writes: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_write(
    path: Path, mode: str = "wb", *, encoding: str | None = None, chmod: int | None = None
) -> Iterator[IO]:
    """Yield a temp file in ``path``'s folder; when the block ends it is flushed, fsynced,
    given ``chmod`` (mkstemp makes 0600) and renamed over ``path``. On any error it is removed
    and ``path`` is left as it was."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if chmod is not None:
            os.chmod(tmp, chmod)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fsync_dir(directory: Path) -> None:
    """Make the renames in ``directory`` durable (best effort: not every platform can open a
    directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def publish_folder(tmp: Path, final: Path) -> None:
    """Give a folder written under a temporary name its final name, durably: every file in it
    and the folder itself fsynced first (so no reader, and no crash, can find the final name
    with a file missing or half written), then renamed, then the parent fsynced.

    ``final`` must not exist (a folder is renamed over nothing).
    """
    for entry in os.scandir(tmp):
        if entry.is_file(follow_symlinks=False):
            fd = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    fsync_dir(tmp)
    os.replace(tmp, final)
    fsync_dir(final.parent)
