"""Shared fixtures: a small multi-language repository written fresh for each test."""

from __future__ import annotations

import hashlib
import os
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

# Data, not tests: fixtures/ranklens_snapshot is a frozen copy of ranklens's own sources
# (tests included) that the labeled set evals/ranklens.jsonl is asked of.
collect_ignore = ["fixtures"]

# Subprocesses (`python -m ranklens` in a temp dir) import this checkout, not whichever one an
# editable install points at: a git worktree's tests test the worktree's code.
_ROOT = str(Path(__file__).resolve().parent.parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p)

FILES = {
    "app/auth.py": '''
        """User authentication helpers."""

        import hashlib


        class PasswordHasher:
            """Hash and verify user passwords with a salt."""

            def hash_password(self, password: str, salt: str) -> str:
                """Return the salted sha256 digest of a password."""
                return hashlib.sha256((salt + password).encode()).hexdigest()

            def verify_password(self, password: str, salt: str, digest: str) -> bool:
                return self.hash_password(password, salt) == digest


        def login_user(username, password, store):
            """Check the credentials of a user against the store and open a session."""
            record = store.get(username)
            if record is None:
                return None
            hasher = PasswordHasher()
            if hasher.verify_password(password, record["salt"], record["digest"]):
                return {"user": username, "session": True}
            return None
    ''',
    "app/cache.py": '''
        class LRUCache:
            """A least-recently-used cache with a fixed capacity."""

            def __init__(self, capacity):
                self.capacity = capacity
                self.items = {}

            def get(self, key):
                value = self.items.pop(key, None)
                if value is not None:
                    self.items[key] = value
                return value

            def put(self, key, value):
                self.items.pop(key, None)
                if len(self.items) >= self.capacity:
                    oldest = next(iter(self.items))
                    del self.items[oldest]
                self.items[key] = value
    ''',
    "web/router.js": """
        // Route incoming HTTP requests to handlers.
        export function parseRoute(url) {
          const [path, query] = url.split("?");
          return { path, query };
        }

        export class Router {
          constructor() {
            this.routes = new Map();
          }

          addRoute(method, path, handler) {
            this.routes.set(`${method} ${path}`, handler);
          }

          dispatch(request) {
            const { path } = parseRoute(request.url);
            const handler = this.routes.get(`${request.method} ${path}`);
            return handler ? handler(request) : { status: 404 };
          }
        }
    """,
    "server/main.go": """
        package main

        import "fmt"

        // RateLimiter limits how many requests a client may send per second.
        type RateLimiter struct {
            limit int
            seen  map[string]int
        }

        // Allow reports whether the client may send another request.
        func (r *RateLimiter) Allow(client string) bool {
            r.seen[client]++
            return r.seen[client] <= r.limit
        }

        func main() {
            limiter := &RateLimiter{limit: 10, seen: map[string]int{}}
            fmt.Println(limiter.Allow("127.0.0.1"))
        }
    """,
    "engine/src/lib.rs": """
        /// Parse a configuration file into key/value pairs.
        pub fn parse_config(text: &str) -> Vec<(String, String)> {
            text.lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect()
        }

        pub struct Matrix {
            rows: usize,
            cols: usize,
        }

        impl Matrix {
            /// Multiply two matrices.
            pub fn multiply(&self, other: &Matrix) -> Matrix {
                Matrix { rows: self.rows, cols: other.cols }
            }
        }
    """,
    "docs/guide.md": """
        # Guide

        How to use the project.

        ## Installation

        Install the package with pip and run the server.

        ## Configuration

        Settings are read from a configuration file with key=value lines.
    """,
    ".gitignore": "ignored/\n*.log\n",
    "ignored/skip.py": "def should_not_be_indexed(): pass\n",
    "debug.log": "log line\n",
    ".env": "API_TOKEN=supersecret\n",
    "keys/server.pem": "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n",
}


def write_repo(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    return root


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own index cache, never the user's."""
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    # The optional deep arm is off unless a root turns it on, so the suite behaves the same with
    # and without its extra; a test that needs it turns it on itself (fake_deep, tests/test_deep.py).
    monkeypatch.delenv("RANKLENS_DEEP", raising=False)


@pytest.fixture
def sample_repo(tmp_path) -> Path:
    return write_repo(tmp_path / "repo")


@pytest.fixture
def stepped_repo(tmp_path) -> Path:
    """A repository whose first build takes several steps under :func:`small_steps`."""
    from partial_steps import write_stepped_repo

    return write_stepped_repo(tmp_path / "repo")


@pytest.fixture
def small_steps(monkeypatch) -> None:
    """A long pass's first steps of a few chunks each (issue 36; tests/partial_steps.py)."""
    from partial_steps import small_steps

    small_steps(monkeypatch)


class FakeDeepEncoder:
    """Stands in for the deep arm's model: a hashed bag of code tokens in 384 dimensions,
    cheap, deterministic and lexical enough to rank. ``gate`` makes every call wait (a slow
    model); ``seen`` lists every text encoded."""

    name = "fake-encoder"
    dim = 384

    def __init__(self) -> None:
        self.gate: threading.Event | None = None
        self.started = threading.Event()
        self.seen: list[str] = []

    def encode(self, texts, batch_size=16):
        from ranklens.core.text.tokenize import code_tokens

        texts = list(texts)
        self.started.set()
        if self.gate is not None:
            self.gate.wait(20)
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in code_tokens(text):
                slot = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little")
                out[i, slot % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=out, where=norms > 0)


@pytest.fixture
def fake_deep(monkeypatch) -> FakeDeepEncoder:
    """The deep arm "installed" and turned on for every root (``RANKLENS_DEEP=1``), with
    :class:`FakeDeepEncoder` for a model (its build and the TUI's handling of it run
    everywhere, extra or not)."""
    from ranklens.core.arms.deep import model

    encoder = FakeDeepEncoder()
    monkeypatch.setattr(model, "unavailable", lambda: None)
    monkeypatch.setattr(model, "model_id", lambda: FakeDeepEncoder.name)
    monkeypatch.setattr(model, "_ENCODER", encoder)
    monkeypatch.setenv("RANKLENS_DEEP", "1")
    return encoder


@pytest.fixture
def small_segments(monkeypatch):
    """Segments of ~50 chunks (about one file batch each), merged after 8 small ones."""
    from ranklens.core.index import batches
    from ranklens.core.storage import segments

    monkeypatch.setattr(batches, "SEGMENT_CHUNKS", 50)
    monkeypatch.setattr(segments, "SEGMENT_CHUNKS", 50)
    monkeypatch.setattr(segments, "SMALL_SEGMENT", 12)
    monkeypatch.setattr(batches, "CHUNK_BATCH_BYTES", 20_000)
