"""Tests for core.discovery: real files in tmp_path, real git repositories."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ranklens.core.discovery as discovery
import ranklens.core.discovery.git as discovery_git
import ranklens.core.discovery.listing as discovery_listing
from ranklens.core.discovery import (
    BUILTIN_EXCLUDED_DIRS,
    DiscoveryOptions,
    FileEntry,
    discover,
    read_text,
)
from ranklens.core.text.secrets import MARKER

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


# --- helpers -----------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keep the machine's git config and any repository above tmp_path out of the tests."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def init_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    return root


def paths(root: Path | str, options: DiscoveryOptions | None = None) -> list[str]:
    return [f.path for f in discover(root, options).files]


def walk_only():
    """Force walk mode (used where git must not answer)."""
    return mock.patch.object(discovery_listing, "_git_list", return_value=None)


def fake_key(label: str, lines: int = 4) -> str:
    """A syntactically plausible private key block (random base64, not a real key).

    Built by concatenation so this test file itself holds no key block.
    """
    body = base64.b64encode(os.urandom(48 * lines)).decode()
    rows = [body[i : i + 64] for i in range(0, len(body), 64)]
    begin = "-----" + "BEGIN " + label + "-----"
    end = "-----" + "END " + label + "-----"
    return "\n".join([begin, *rows, end]) + "\n"


# --- git mode ----------------------------------------------------------------------


@needs_git
def test_git_mode_lists_tracked_and_untracked_not_ignored(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "tracked.py")
    write(repo, "forced.log")  # tracked despite matching .gitignore: git lists it
    write(repo, "untracked.py")
    write(repo, "ignored.log")
    write(repo, "private.txt")
    # Only git knows .git/info/exclude: its effect proves git produced the list.
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("private.txt\n")
    git(repo, "add", ".gitignore", "tracked.py")
    git(repo, "add", "-f", "forced.log")

    assert paths(repo) == ["forced.log", "tracked.py", "untracked.py"]


@needs_git
def test_git_mode_root_in_subdirectory_gives_root_relative_paths(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "top.py")
    write(repo, "pkg/mod.py")
    write(repo, "pkg/sub/deep.py")
    write(repo, "pkg/new.py")  # untracked
    git(repo, "add", "top.py", "pkg/mod.py", "pkg/sub/deep.py")

    assert paths(repo / "pkg") == ["mod.py", "new.py", "sub/deep.py"]
    assert paths(str(repo / "pkg" / "sub")) == ["deep.py"]


@needs_git
def test_git_mode_skips_tracked_files_deleted_from_disk_silently(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "kept.py")
    write(repo, "deleted.py")
    git(repo, "add", ".")
    (repo / "deleted.py").unlink()

    result = discover(repo)
    assert [f.path for f in result.files] == ["kept.py"]
    assert result.skipped == []


@needs_git
def test_git_missing_falls_back_to_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "a.py")
    write(repo, "b.log")
    write(repo, "private.txt")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("private.txt\n")
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))  # no git on PATH any more

    # The walk honours .gitignore but cannot know .git/info/exclude.
    assert paths(repo) == ["a.py", "private.txt"]


@needs_git
def test_git_failure_falls_back_to_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "a.py")
    write(repo, "b.log")

    def failing_run(cmd, **kwargs):  # e.g. "detected dubious ownership"
        return subprocess.CompletedProcess(cmd, 128, b"", b"fatal: unsafe repository")

    monkeypatch.setattr(discovery_git.subprocess, "run", failing_run)
    assert paths(repo) == ["a.py"]


@needs_git
def test_git_mode_filters_through_ignore_and_ranklensignore(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".ignore", "*.gen.py\n")
    write(repo, "a.py")
    write(repo, "a.gen.py")
    write(repo, "vendored/lib.py")
    write(repo, "pkg/.ranklensignore", "fixtures/\n!keep.gen.py\n")
    write(repo, "pkg/fixtures/data.py")
    write(repo, "pkg/keep.gen.py")  # re-included by the deeper file
    write(repo, "pkg/mod.py")
    # A personal .ranklensignore that git itself ignores still applies.
    write(repo, ".ranklensignore", "vendored/\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("/.ranklensignore\n")
    git(repo, "add", ".")

    assert paths(repo) == ["a.py", "pkg/keep.gen.py", "pkg/mod.py"]


@needs_git
def test_git_mode_applies_builtin_excluded_dirs_to_tracked_files(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "src/app.js")
    write(repo, "node_modules/lib/index.js")
    write(repo, "web/dist/bundle.js")
    git(repo, "add", "-f", ".")

    assert paths(repo) == ["src/app.js"]


@needs_git
def test_git_mode_does_not_list_untracked_excluded_dirs(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "a.py")
    write(repo, ".venv/lib/site.py")  # untracked and not in any .gitignore
    write(repo, "pkg.egg-info/PKG-INFO")
    write(repo, "we ird[1]/x.py")
    write(repo, "src/!odd#/y.py")
    opts = DiscoveryOptions(exclude_dirs=frozenset({"we ird[1]", "!odd#"}))

    assert paths(repo, opts) == ["a.py"]
    assert paths(repo) == ["a.py", "src/!odd#/y.py", "we ird[1]/x.py"]
    # git itself was asked not to descend there (and accepted the escaped names).
    listed = discovery_git._git_list(str(repo), BUILTIN_EXCLUDED_DIRS | opts.exclude_dirs)
    assert listed == ["a.py"]


@needs_git
def test_git_ignored_root_is_walked(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".gitignore", "/out/\n")
    write(repo, "main.py")
    write(repo, "out/report.md")
    write(repo, "out/.gitignore", "*.tmp\n")
    write(repo, "out/scratch.tmp")
    git(repo, "add", ".gitignore", "main.py")

    # git lists nothing there; the user opened it on purpose, so walk it.
    assert paths(repo / "out") == ["report.md"]


@needs_git
def test_git_mode_skips_tracked_symlink_out_of_root(tmp_path: Path) -> None:
    outside = write(tmp_path, "outside/secret_notes.md", "outside\n")
    repo = init_repo(tmp_path / "repo")
    write(repo, "real.py")
    (repo / "escape.md").symlink_to(outside)
    (repo / "alias.py").symlink_to("real.py")
    git(repo, "add", ".")

    result = discover(repo)
    assert [f.path for f in result.files] == ["alias.py", "real.py"]
    assert result.skipped == [("escape.md", "symlink outside root")]


@needs_git
def test_root_inside_dot_git_is_not_git_mode(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "a.py")
    git(repo, "add", ".")
    # Inside .git, `git ls-files` would list the work tree; we must not take that.
    listed = paths(repo / ".git" / "info")
    assert "a.py" not in listed
    assert all(not p.startswith("..") for p in listed)


# --- walk mode: .gitignore semantics -------------------------------------------------


def test_walk_honours_root_gitignore_with_negation(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n!keep.log\n/only_root.txt\n")
    for rel in ("a.py", "a.log", "keep.log", "only_root.txt", "sub/only_root.txt", "sub/b.log"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["a.py", "keep.log", "sub/only_root.txt"]


def test_walk_nested_gitignore_applies_relative_to_its_directory(tmp_path: Path) -> None:
    write(tmp_path, "sub/.gitignore", "/gen.py\ndata/*.csv\n")
    for rel in ("gen.py", "sub/gen.py", "sub/deeper/gen.py", "data/x.csv", "sub/data/x.csv", "sub/data/x.json"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["data/x.csv", "gen.py", "sub/data/x.json", "sub/deeper/gen.py"]


def test_walk_deeper_gitignore_overrides_shallower(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.txt\n")
    write(tmp_path, "docs/.gitignore", "!keep.txt\n")
    for rel in ("a.txt", "docs/keep.txt", "docs/other.txt"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["docs/keep.txt"]


def test_walk_excluded_directory_cannot_be_reincluded(tmp_path: Path) -> None:
    # gitignore: "It is not possible to re-include a file if a parent directory is excluded."
    write(tmp_path, ".gitignore", "logs/\n!logs/important.txt\nonly_dirs/\n")
    write(tmp_path, "logs/important.txt")
    write(tmp_path, "only_dirs/x.py")
    write(tmp_path, "sub/only_dirs/y.py")
    write(tmp_path, "only_dirs.py")  # a file: "only_dirs/" matches directories only

    assert paths(tmp_path) == ["only_dirs.py"]


def test_walk_whitelist_idiom(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*\n!*/\n!*.py\n")
    for rel in ("a.py", "a.txt", "pkg/b.py", "pkg/b.md"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["a.py", "pkg/b.py"]


def test_walk_tolerates_malformed_ignore_lines(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "!\n\\\n*.log\n")
    write(tmp_path, "a.py")
    write(tmp_path, "b.log")

    assert paths(tmp_path) == ["a.py"]


# Hypothesis: the walk must agree with git itself on random ignore files.
_TREE = (
    "a.txt",
    "a.log",
    "keep.log",
    "foo",
    "src/main.py",
    "src/gen/out.py",
    "src/gen/keep.py",
    "src/deep/x.log",
    "src/deep/y.txt",
    "src/deep/a/b/c.txt",
    "docs/readme.md",
    "docs/notes.txt",
    "lib/a/b/c.txt",
    "lib/a/keep.txt",
    "lib/foo/bar.txt",
    "sub/foo/bar.txt",
    "sub/b",
    "a/b/a/b.txt",
    "!bang.txt",
    "#hash.txt",
    "sp ace.txt",
    "x[1].txt",
    "deep/deep/z.py",
)
# Hand-picked classics (whitelisting, re-inclusion, "/**" forms) ...
_PATTERNS = (
    "*.log",
    "!keep.log",
    "gen/",
    "/gen",
    "src/gen/*",
    "!src/gen/keep.py",
    "**/b",
    "b/",
    "lib/**/c.txt",
    "docs",
    "!docs/readme.md",
    "docs/*",
    "*.txt",
    "!*.txt",
    "foo",
    "/foo",
    "foo/",
    "sub/",
    "!sub/foo/",
    "a/",
    "*",
    "!*/",
    "!*.py",
    "?.txt",
    "[ab].txt",
    "**/deep/**",
    "deep/",
    "!deep/y.txt",
    "/a.txt",
    "c.txt",
    "!c.txt",
    "*/",
    "main.py",
    "# comment",
    "",
    "src/**",
    "!src/deep/",
    "x.*",
    "\\#not-a-comment",
    "lib/**/",
    "!lib/a/",
    "src/**/",
    "**/",
    "!**/",
    "!a/",
    "!lib/",
    "lib/*/",
    "!/src",
    "a",
    "!b",
    "deep",
    "!deep/",
)
# ... and patterns assembled from segments (negation, anchoring, dir-only, escapes).
_SEGMENTS = (
    "a",
    "b",
    "foo",
    "deep",
    "src",
    "lib",
    "*",
    "**",
    "?",
    "[ab]",
    "*.txt",
    "*.py",
    "x*",
    "gen",
    "keep.*",
    "[!a]*",
    "\\!bang.txt",
    "\\#hash.txt",
    "sp ace.txt",
    "x\\[1\\].txt",
    "x[1].txt",
)
_built_pattern = st.builds(
    lambda neg, lead, segs, trail: (
        ("!" if neg else "") + ("/" if lead else "") + "/".join(segs) + ("/" if trail else "")
    ),
    st.booleans(),
    st.booleans(),
    st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=4),
    st.booleans(),
)
_pattern_lists = st.lists(st.one_of(st.sampled_from(_PATTERNS), _built_pattern), max_size=6)


@needs_git
@pytest.mark.slow  # ~9 s: 80 random trees, each listed by git and walked
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root_rules=_pattern_lists, src_rules=_pattern_lists, lib_rules=_pattern_lists, deep_rules=_pattern_lists)
def test_walk_matches_git_on_random_gitignores(root_rules, src_rules, lib_rules, deep_rules) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel in _TREE:
            write(root, rel)
        for rel, rules in (
            (".gitignore", root_rules),
            ("src/.gitignore", src_rules),
            ("lib/.gitignore", lib_rules),
            ("src/deep/.gitignore", deep_rules),
        ):
            if rules:
                write(root, rel, "\n".join(rules) + "\n")
        git(root, "init", "-q")
        listed = git(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0")
        truth = sorted(p for p in listed if p)
        with walk_only():  # git lists hidden files (the .gitignore files themselves)
            assert paths(root, DiscoveryOptions(hidden=True)) == truth


# --- .ignore / .ranklensignore -------------------------------------------------------


def test_walk_honours_ignore_and_ranklensignore_at_any_level(tmp_path: Path) -> None:
    write(tmp_path, ".ignore", "*.snap\n")
    write(tmp_path, "pkg/.ranklensignore", "fixtures/\n")
    for rel in ("a.py", "a.snap", "pkg/m.py", "pkg/fixtures/f.py", "fixtures/top.py"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["a.py", "fixtures/top.py", "pkg/m.py"]


def test_ranklensignore_overrides_gitignore_in_same_directory(tmp_path: Path) -> None:
    # Within one directory: .gitignore < .ignore < .ranklensignore (last match wins).
    write(tmp_path, ".gitignore", "*.gen.py\n")
    write(tmp_path, ".ignore", "notes.md\n")
    write(tmp_path, ".ranklensignore", "!wanted.gen.py\n")
    for rel in ("a.gen.py", "wanted.gen.py", "notes.md"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["wanted.gen.py"]


# --- built-in excluded directories ---------------------------------------------------


@pytest.mark.parametrize("dirname", sorted(BUILTIN_EXCLUDED_DIRS) + ["pkg.egg-info"])
def test_builtin_excluded_dirs_are_skipped_at_any_depth(tmp_path: Path, dirname: str) -> None:
    write(tmp_path, "main.py")
    write(tmp_path, f"{dirname}/top.py")
    write(tmp_path, f"a/b/{dirname}/deep.py")

    assert paths(tmp_path) == ["main.py"]


def test_source_and_config_dirs_that_look_generated_are_kept(tmp_path: Path) -> None:
    for name in ("env", ".vscode", "coverage"):
        assert name not in BUILTIN_EXCLUDED_DIRS
    for rel in ("env/settings.py", ".vscode/settings.json", "coverage/report.py"):
        write(tmp_path, rel)

    assert paths(tmp_path) == ["coverage/report.py", "env/settings.py"]  # .vscode: hidden
    assert paths(tmp_path, DiscoveryOptions(hidden=True)) == [
        ".vscode/settings.json",
        "coverage/report.py",
        "env/settings.py",
    ]


def test_root_itself_may_have_an_excluded_name(tmp_path: Path) -> None:
    write(tmp_path, "build/gen.py")
    assert paths(tmp_path / "build") == ["gen.py"]


# --- secret-looking names ------------------------------------------------------------

SECRET_NAMES = [
    ".env",
    ".env.local",
    ".env.production",
    ".ENV",
    "tls.key",
    "cert.p12",
    "cert.pfx",
    "store.jks",
    "release.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "_netrc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.xml",
    "credentials.ini",
    "credentials.toml",
    "credentials.txt",
    "credentials.csv",
    "Credentials.json",
    "secrets.yaml",
    "client_secret.json",
    "secret.txt",
    "secret",
    "app-secrets.env",
    "passwords.kdbx",
    ".htpasswd",
    "aws_credentials",
    "secrets.production.json",
    "client_secret_1234-abc.apps.googleusercontent.com.json",
    "db-secret.yml",
]
KEPT_NAMES = [
    ".env.example",
    ".env.sample",
    ".env.template",
    "id_rsa.pub",
    "id_ed25519.pub",
    "credentials.py",
    "credentials_test.go",
    "credentials.ts",
    "secrets.py",
    "secret_manager.go",
    "secrets.md",
    "envelope.py",
    ".envrc.py",
    # The word in the middle of a name: kernel documentation of a securityfs interface.
    "securityfs-secrets-coco",
    "my-secret-sauce.txt",
    "cert.pem",
    # Documentation pages about credentials (their content rules still apply): 20 pages of a
    # large public repository were skipped as "secret data file name".
    "prefect_aws-credentials.mdx",
    "secrets.html",
    "credentials.rst",
    "client_secret.mdx",
    "secrets.yaml.example",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_files_are_skipped_by_name(tmp_path: Path, name: str) -> None:
    write(tmp_path, "main.py")
    write(tmp_path, f"conf/{name}", "value\n")

    result = discover(tmp_path, DiscoveryOptions(hidden=True))  # the secret rule wins anyway
    assert [f.path for f in result.files] == ["main.py"]
    assert result.skipped == [(f"conf/{name}", "secret")]
    assert discover(tmp_path).skipped == [(f"conf/{name}", "secret")]


@pytest.mark.parametrize("name", KEPT_NAMES)
def test_source_and_documentation_about_secrets_is_kept(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "value\n")
    result = discover(tmp_path, DiscoveryOptions(hidden=True))
    assert [f.path for f in result.files] == [name]
    assert result.skipped == []


def test_kernel_securityfs_secrets_coco_doc_is_not_a_secret(tmp_path: Path) -> None:
    # Linux 6.1: Documentation/ABI/testing/securityfs-secrets-coco was skipped as a secret.
    doc = "What:\t\tsecurityfs/secrets/coco\nDescription:\n\t\tExposes confidential computing secrets.\n"
    write(tmp_path, "Documentation/ABI/testing/securityfs-secrets-coco", doc)
    result = discover(tmp_path)
    assert [f.path for f in result.files] == ["Documentation/ABI/testing/securityfs-secrets-coco"]
    assert result.skipped == []
    assert read_text(tmp_path, "Documentation/ABI/testing/securityfs-secrets-coco") == (doc, "")


def test_pem_files_are_judged_by_content(tmp_path: Path) -> None:
    cert = "-----BEGIN CERTIFICATE-----\n" + base64.b64encode(os.urandom(96)).decode() + "\n-----END CERTIFICATE-----\n"
    write(tmp_path, "ca.pem", cert)
    write(tmp_path, "server.pem", fake_key("RSA PRIVATE KEY"))
    write(tmp_path, "both.pem", cert + fake_key("PRIVATE KEY"))
    assert paths(tmp_path) == ["both.pem", "ca.pem", "server.pem"]
    assert read_text(tmp_path, "ca.pem") == (cert, "")
    assert read_text(tmp_path, "server.pem") == (None, "private key")
    text, reason = read_text(tmp_path, "both.pem")
    assert reason == "" and text is not None and text.startswith(cert)
    assert "PRIVATE KEY" not in text and text.count(MARKER) == len(fake_key("PRIVATE KEY").splitlines())


# --- size, extensions, binary names --------------------------------------------------


def test_files_larger_than_max_bytes_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "exact.txt", "a" * 100)
    write(tmp_path, "big.txt", "a" * 101)

    result = discover(tmp_path, DiscoveryOptions(max_bytes=100))
    assert [(f.path, f.size) for f in result.files] == [("exact.txt", 100)]
    assert result.skipped == [("big.txt", "too large")]


def test_extension_filter_and_include_basenames(tmp_path: Path) -> None:
    for rel in ("a.py", "B.PY", "c.md", "d.txt", "Makefile", "sub/Dockerfile", "types.d.ts", "x.ts", "noext"):
        write(tmp_path, rel)
    opts = DiscoveryOptions(
        extensions=frozenset({".py", "md", ".d.ts"}),  # "md" without dot is accepted
        include_basenames=frozenset({"Makefile", "Dockerfile"}),
    )

    result = discover(tmp_path, opts)
    assert [f.path for f in result.files] == ["B.PY", "Makefile", "a.py", "c.md", "sub/Dockerfile", "types.d.ts"]
    assert result.skipped == []  # out-of-scope files are not "skipped"


def test_include_basenames_do_not_override_safety_rules(tmp_path: Path) -> None:
    write(tmp_path, "id_rsa", "k\n")
    opts = DiscoveryOptions(extensions=frozenset({".py"}), include_basenames=frozenset({"id_rsa"}))
    result = discover(tmp_path, opts)
    assert result.files == []
    assert result.skipped == [("id_rsa", "secret")]


@pytest.mark.parametrize(
    "name",
    [
        "logo.png",
        "photo.JPG",
        "anim.gif",
        "favicon.ico",
        "doc.pdf",
        "a.zip",
        "a.tar.gz",
        "a.whl",
        "lib.so",
        "x.dll",
        "x.exe",
        "m.pyc",
        "A.class",
        "lib.jar",
        "f.woff2",
        "f.ttf",
        "s.mp3",
        "v.mp4",
        "data.sqlite",
        "app.db",
        "arr.npy",
        "arr.npz",
    ],
)
def test_known_binary_extensions_are_skipped_without_reading(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, name, "looks like text but is named binary\n")
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))

    result = discover(tmp_path)
    assert result.files == []
    assert result.skipped == [(name, "binary")]
    assert not any(p.endswith(name) for p in opened)


# --- caller overrides ----------------------------------------------------------------


def test_exclude_dirs_adds_to_builtin_list(tmp_path: Path) -> None:
    for rel in ("src/a.py", "third_party/x.py", "src/third_party/y.py", "node_modules/z.js"):
        write(tmp_path, rel)
    opts = DiscoveryOptions(exclude_dirs=frozenset({"third_party"}))

    assert paths(tmp_path, opts) == ["src/a.py"]


def test_exclude_globs_use_gitignore_syntax(tmp_path: Path) -> None:
    for rel in ("a.py", "a_test.py", "keep_test.py", "docs/x.md", "src/docs/y.md", "gen/z.py"):
        write(tmp_path, rel)
    opts = DiscoveryOptions(exclude_globs=("*_test.py", "!keep_test.py", "/docs/", "gen"))

    assert paths(tmp_path, opts) == ["a.py", "keep_test.py", "src/docs/y.md"]


@needs_git
def test_exclude_globs_apply_in_git_mode(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    for rel in ("a.py", "docs/x.md", "pkg/gen/z.py"):
        write(repo, rel)
    git(repo, "add", ".")
    opts = DiscoveryOptions(exclude_globs=("docs/", "gen/"), exclude_dirs=frozenset({"pkg"}))

    assert paths(repo, opts) == ["a.py"]


# --- symlinks ------------------------------------------------------------------------


def test_file_symlink_out_of_root_is_skipped(tmp_path: Path) -> None:
    outside = write(tmp_path, "outside/notes.md", "outside\n")
    root = tmp_path / "root"
    write(root, "real.md")
    (root / "escape.md").symlink_to(outside)
    (root / "alias.md").symlink_to(root / "real.md")

    result = discover(root)
    assert [f.path for f in result.files] == ["alias.md", "real.md"]
    assert result.skipped == [("escape.md", "symlink outside root")]


def test_dir_symlink_out_of_root_is_not_followed(tmp_path: Path) -> None:
    write(tmp_path, "outside/lib/x.py")
    root = tmp_path / "root"
    write(root, "main.py")
    (root / "lib").symlink_to(tmp_path / "outside" / "lib", target_is_directory=True)
    (root / "up").symlink_to(tmp_path, target_is_directory=True)

    result = discover(root)
    assert [f.path for f in result.files] == ["main.py"]
    assert result.skipped == [("lib", "symlink outside root"), ("up", "symlink outside root")]


def test_symlink_loops_terminate(tmp_path: Path) -> None:
    write(tmp_path, "a/b/c.py")
    (tmp_path / "a" / "b" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "a" / "parent").symlink_to("..", target_is_directory=True)
    (tmp_path / "self").symlink_to(tmp_path / "self")  # ELOOP
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")

    result = discover(tmp_path)
    assert [f.path for f in result.files] == ["a/b/c.py"]
    assert result.skipped == []


def test_symlinked_dir_inside_root_is_listed_once_under_its_real_path(tmp_path: Path) -> None:
    write(tmp_path, "real/x.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    # A link into an otherwise excluded directory is an explicit choice: follow it.
    write(tmp_path, "build/docs/guide.md")
    (tmp_path / "docs").symlink_to(tmp_path / "build" / "docs", target_is_directory=True)

    assert paths(tmp_path) == ["docs/guide.md", "real/x.py"]


# --- unreadable and vanishing ---------------------------------------------------------


@pytest.mark.skipif(IS_ROOT, reason="root reads through chmod 000; see the monkeypatched variant")
def test_unreadable_directory_is_skipped_chmod(tmp_path: Path) -> None:
    write(tmp_path, "ok.py")
    locked = tmp_path / "locked"
    write(locked, "hidden.py")
    locked.chmod(0)
    try:
        result = discover(tmp_path)
    finally:
        locked.chmod(0o755)
    assert [f.path for f in result.files] == ["ok.py"]
    assert result.skipped == [("locked", "unreadable directory")]


def test_unreadable_directory_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "ok.py")
    write(tmp_path, "locked/hidden.py")
    real_scandir = os.scandir
    locked = str(tmp_path / "locked")

    def scandir(path):
        if os.fspath(path) == locked:
            raise PermissionError(13, "Permission denied", locked)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = discover(tmp_path)
    assert [f.path for f in result.files] == ["ok.py"]
    assert result.skipped == [("locked", "unreadable directory")]


class _VanishOnStat:
    """A DirEntry whose file is deleted right before it is stat'ed."""

    def __init__(self, entry: os.DirEntry) -> None:
        self._entry = entry

    def __getattr__(self, name: str):
        return getattr(self._entry, name)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        os.unlink(self._entry.path)
        return self._entry.stat(follow_symlinks=follow_symlinks)


class _Listing:
    def __init__(self, entries: list) -> None:
        self._entries = entries

    def __enter__(self):
        return iter(self._entries)

    def __exit__(self, *exc) -> bool:
        return False


def test_files_vanishing_between_listing_and_stat_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "stays.py")
    write(tmp_path, "gone.py")
    write(tmp_path, "gone_dir/x.py")
    real_scandir = os.scandir

    def scandir(path):
        if os.fspath(path) == str(tmp_path / "gone_dir"):
            raise FileNotFoundError(2, "No such file or directory", path)
        with real_scandir(path) as it:
            return _Listing([_VanishOnStat(e) if e.name == "gone.py" else e for e in it])

    monkeypatch.setattr(os, "scandir", scandir)
    result = discover(tmp_path)
    assert [f.path for f in result.files] == ["stays.py"]
    assert result.skipped == []


def test_special_files_are_never_listed(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    write(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe")
    assert paths(tmp_path) == ["a.py"]


# --- read_text -----------------------------------------------------------------------


def test_read_text_accepts_entry_or_path(tmp_path: Path) -> None:
    write(tmp_path, "pkg/a.py", "print('hi')\n")
    [entry] = discover(tmp_path).files
    assert isinstance(entry, FileEntry)
    assert read_text(tmp_path, entry) == ("print('hi')\n", "")
    assert read_text(str(tmp_path), "pkg/a.py") == ("print('hi')\n", "")


def test_read_text_binary_is_a_nul_in_the_first_8k(tmp_path: Path) -> None:
    write(tmp_path, "early.dat", b"abc\x00def")
    write(tmp_path, "late.txt", b"a" * 9000 + b"\x00")
    assert read_text(tmp_path, "early.dat") == (None, "binary")
    text, reason = read_text(tmp_path, "late.txt")  # only the first 8 KiB are sniffed
    assert reason == "" and text is not None and text.endswith("\x00")


@pytest.mark.parametrize(
    "label",
    [
        "PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "DSA PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_read_text_refuses_private_key_files(tmp_path: Path, label: str) -> None:
    write(tmp_path, "key.txt", fake_key(label))
    assert read_text(tmp_path, "key.txt") == (None, "private key")


@pytest.mark.parametrize("label", ["PRIVATE KEY", "RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
def test_read_text_redacts_private_key_blocks_inside_other_text(tmp_path: Path, label: str) -> None:
    key = fake_key(label)
    write(tmp_path, "config.yaml", "name: demo\nkey: |\n" + key + "port: 8080\n")
    text, reason = read_text(tmp_path, "config.yaml")
    assert reason == "" and text is not None
    lines = text.split("\n")
    assert lines[:2] == ["name: demo", "key: |"] and lines[-2:] == ["port: 8080", ""]
    assert lines[2:-2] == [MARKER] * len(key.splitlines())  # same line count: spans stay valid


def test_a_short_private_key_block_counts(tmp_path: Path) -> None:
    # The hostile-input probe of issue #14: a body far shorter than a real key's.
    begin, end = "-----" + "BEGIN RSA PRIVATE KEY-----", "-----" + "END RSA PRIVATE KEY-----"
    write(tmp_path, "short.txt", f"{begin}\nMIIBOgIBAAJBAKj34GkxFhD9\n{end}\n")
    write(tmp_path, "shorter.txt", f"notes\n{begin}\nabc\n{end}\nmore notes\n")
    write(tmp_path, "empty.txt", f"notes\n{begin}\n{end}\n")
    assert read_text(tmp_path, "short.txt") == (None, "private key")
    assert read_text(tmp_path, "shorter.txt") == (f"notes\n{MARKER}\n{MARKER}\n{MARKER}\nmore notes\n", "")
    assert read_text(tmp_path, "empty.txt") == (f"notes\n{MARKER}\n{MARKER}\n", "")


def test_read_text_refuses_keys_with_headers_indents_and_escapes(tmp_path: Path) -> None:
    key = fake_key("RSA PRIVATE KEY")
    begin, *rest = key.splitlines()
    encrypted = "\n".join([begin, "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,0011AABB", "", *rest])
    pgp = fake_key("PGP PRIVATE KEY BLOCK").replace("-----\n", "-----\nVersion: GnuPG v2\n\n", 1)
    indented = "key: |\n" + "".join("    " + line + "\n" for line in key.splitlines())
    as_json = '{"type": "service_account", "private_key": "' + key.replace("\n", "\\n") + '"}\n'
    as_code = "KEY = (\n" + "".join(f'    "{line}\\n"\n' for line in key.splitlines()) + ")\n"
    as_java = "String k =\n" + "".join(f'    "{line}\\n" +\n' for line in key.splitlines()) + '    "";\n'
    ssh2 = "---- " + "BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\n" + 'Comment: "k"\n' + key.split("\n", 1)[1]
    putty = "PuTTY-User-Key-File-" + "3: ssh-ed25519\nEncryption: none\n"
    truncated = "\n".join(key.splitlines()[:-1]) + "\n"  # no END marker, but a long body
    for i, text in enumerate([encrypted, pgp, as_json, ssh2, putty, truncated]):
        write(tmp_path, f"f{i}.txt", text)
        assert read_text(tmp_path, f"f{i}.txt") == (None, "private key"), text
    body = rest[1]
    for i, text in enumerate([indented, as_code, as_java]):
        write(tmp_path, f"g{i}.txt", text)
        got, reason = read_text(tmp_path, f"g{i}.txt")
        assert reason == "" and got is not None and body not in got and "PRIVATE" not in got, got
        assert got.count("\n") == text.count("\n") and got.split("\n")[0] == text.split("\n")[0]


def test_read_text_keeps_code_that_only_mentions_key_markers(tmp_path: Path) -> None:
    marker = "-----" + "BEGIN RSA PRIVATE KEY-----"
    code = (
        f'HEADER = "{marker}"\n'
        'FOOTER = "-----END RSA PRIVATE KEY-----"\n'
        f'def is_key(line):\n    return line.strip() == "{marker}"\n'
        "PUBLIC = '-----BEGIN PUBLIC KEY-----'\n"
        f"# {marker}\n# ========================================================\n"
    )
    write(tmp_path, "pem.py", code)
    assert read_text(tmp_path, "pem.py") == (code, "")


def test_read_text_can_read_this_projects_own_key_handling_code() -> None:
    repo = Path(__file__).resolve().parents[1]
    for rel in ("core/discovery/read.py", "tests/test_discovery.py"):
        text, reason = read_text(repo, rel)
        assert reason == "" and text, rel


def test_read_text_too_large(tmp_path: Path) -> None:
    write(tmp_path, "big.txt", "a" * 11)
    write(tmp_path, "ok.txt", "a" * 10)
    assert read_text(tmp_path, "big.txt", max_bytes=10) == (None, "too large")
    assert read_text(tmp_path, "ok.txt", max_bytes=10) == ("a" * 10, "")


def test_read_text_vanished(tmp_path: Path) -> None:
    assert read_text(tmp_path, "nope.py") == (None, "vanished")
    assert read_text(tmp_path, "nodir/nope.py") == (None, "vanished")
    write(tmp_path, "file.py")
    assert read_text(tmp_path, "file.py/child") == (None, "vanished")


def test_read_text_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = str(write(tmp_path, "locked.py"))
    real_open = os.open

    def fake_open(path, *args, **kwargs):
        if os.fspath(path) == target:
            raise PermissionError(13, "Permission denied", target)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    assert read_text(tmp_path, "locked.py") == (None, "unreadable")
    monkeypatch.undo()
    (tmp_path / "adir").mkdir()
    assert read_text(tmp_path, "adir") == (None, "unreadable")


@pytest.mark.skipif(IS_ROOT, reason="root reads through chmod 000; see the monkeypatched variant")
def test_read_text_unreadable_chmod(tmp_path: Path) -> None:
    path = write(tmp_path, "locked.py")
    path.chmod(0)
    try:
        assert read_text(tmp_path, "locked.py") == (None, "unreadable")
    finally:
        path.chmod(0o644)


def test_read_text_does_not_hang_on_a_fifo(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(tmp_path / "pipe")
    assert read_text(tmp_path, "pipe") == (None, "unreadable")


def test_read_text_replaces_invalid_utf8(tmp_path: Path) -> None:
    write(tmp_path, "latin1.txt", "café = 1\n".encode("latin-1"))
    assert read_text(tmp_path, "latin1.txt") == ("caf\ufffd = 1\n", "")


def test_read_text_strips_bom_and_normalises_newlines(tmp_path: Path) -> None:
    write(tmp_path, "win.py", b"\xef\xbb\xbfa = 1\r\nb = 2\rc = 3\n\r\n")
    assert read_text(tmp_path, "win.py") == ("a = 1\nb = 2\nc = 3\n\n", "")


# --- determinism and speed -----------------------------------------------------------


def test_output_is_sorted_and_deterministic(tmp_path: Path) -> None:
    names = ["b/z.py", "a.py", "B.py", "a/b.py", "a-b.py", "z.p12", "c.png", "a/x.key"]
    for rel in names:
        write(tmp_path, rel)
    first = discover(tmp_path)
    second = discover(tmp_path)
    assert first == second
    listed = [f.path for f in first.files]
    assert listed == sorted(listed) == ["B.py", "a-b.py", "a.py", "a/b.py", "b/z.py"]
    assert first.skipped == sorted(first.skipped)
    assert first.skipped == [("a/x.key", "secret"), ("c.png", "binary"), ("z.p12", "secret")]


def test_entries_carry_size_and_mtime(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", "12345")
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    assert discover(tmp_path).files == [FileEntry("a.py", 5, 2_000_000_000)]


def test_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "missing")
    write(tmp_path, "file.py")
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "file.py")


def test_discovery_of_a_large_tree_finds_every_file(tmp_path: Path) -> None:
    # 3,000 files (creating 10k costs seconds on slow test filesystems). Its speed (roughly 10k
    # files per 0.1 s) is measured in benchmarks/, not asserted here: a loaded machine is no bug.
    write(tmp_path, ".gitignore", "*.log\n")
    for d in range(30):
        sub = tmp_path / f"pkg{d}" / "mod"
        sub.mkdir(parents=True)
        if d % 10 == 0:
            (sub / ".gitignore").write_text("/tmp_*\n")
        for f in range(100):  # empty files: creation, not discovery, dominates otherwise
            os.close(os.open(sub / f"file{f}.py", os.O_CREAT | os.O_WRONLY, 0o644))
    result = discover(tmp_path)
    assert len(result.files) == 3_000  # the .gitignore files are hidden


# --- why a tree looks empty: rules, counts, explain (issue #14, item 5) -------------


def debian_like(root: Path) -> Path:
    """The Linux sources as Debian ships them: the top .gitignore ends with ``/*``."""
    write(root, ".gitignore", "# Debian packaging\n*.o\n/*\n!/debian/\n")
    write(root, "Makefile", "all:\n")
    write(root, "README", "Linux kernel\n")
    for rel in ("kernel/fork.c", "mm/slab.c", "arch/x86/Makefile", "fs/ext4/inode.c"):
        write(root, rel, "int x;\n")
    return root


def test_an_ignore_rule_is_counted_with_its_file_and_line(tmp_path: Path) -> None:
    root = debian_like(tmp_path / "linux")
    result = discover(root)
    assert result.files == [] and result.mode == "walk"
    [top] = result.excluded
    assert top.rule == discovery.Rule("ignore", ".gitignore", 3, "/*")
    assert (top.dirs, top.files, top.example) == (4, 3, ".gitignore")
    assert str(top.rule) == ".gitignore:3: /*"
    warning = result.warning("linux")
    assert warning is not None and warning.startswith("kept no files under linux: .gitignore:3: /* passed over")
    assert "4 directories, 3 files" in warning and "--no-ignore" in warning


def test_no_warning_for_an_ordinary_tree(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\nbuild/\n")
    for i in range(30):
        write(tmp_path, f"src/m{i}.py")
    write(tmp_path, "a.log")
    write(tmp_path, "node_modules/x/index.js")
    result = discover(tmp_path)
    assert len(result.files) == 30 and result.warning() is None
    counts = {str(e.rule): (e.files, e.dirs) for e in result.excluded}
    assert counts == {
        ".gitignore:1: *.log": (1, 0),
        "excluded directory (node_modules)": (0, 1),
        "hidden (name starts with a dot)": (1, 0),
    }


def test_a_large_share_passed_over_is_warned_about(tmp_path: Path) -> None:
    write(tmp_path, "keep.py")
    write(tmp_path, "sub/.ignore", "*.gen.py\n")
    for i in range(25):
        write(tmp_path, f"sub/m{i}.gen.py")
    result = discover(tmp_path)
    warning = result.warning("r")
    assert warning is not None and warning.startswith("kept 1 files under r and passed over 26 entries (96%)")
    assert "sub/.ignore:1: *.gen.py passed over 25 files, e.g. sub/m0.gen.py" in warning
    assert "1 other rule in --json" in warning


def test_rules_name_nested_ignore_files_and_exclude_globs(tmp_path: Path) -> None:
    write(tmp_path, "pkg/.gitignore", "# generated\n\n/out/\n")
    write(tmp_path, "pkg/out/x.py")
    write(tmp_path, "pkg/a_test.py")
    write(tmp_path, "pkg/b.py")
    result = discover(tmp_path, DiscoveryOptions(exclude_globs=("*.md", "*_test.py")))
    rules = {str(e.rule): e.entries for e in result.excluded}
    assert rules == {
        "pkg/.gitignore:3: /out/": 1,
        "exclude_globs[2]: *_test.py": 1,
        "hidden (name starts with a dot)": 1,
    }


@needs_git
def test_git_mode_counts_its_own_rules(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "a.py")
    write(repo, ".ignore", "*.snap\n")
    write(repo, "t.snap")
    write(repo, ".github/workflows/ci.yml", "on: push\n")
    git(repo, "add", ".")
    result = discover(repo)
    assert result.mode == "git" and [f.path for f in result.files] == ["a.py"]
    assert {str(e.rule): (e.files, e.dirs) for e in result.excluded} == {
        ".ignore:1: *.snap": (1, 0),
        "hidden (name starts with a dot)": (1, 1),
    }


# --- hidden and no_ignore: ripgrep's --hidden and --no-ignore -------------------------


def test_hidden_entries_are_skipped_unless_asked_for(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    write(tmp_path, ".editorconfig", "root = true\n")
    write(tmp_path, "pkg/.hidden.py")
    write(tmp_path, ".venv/lib.py")  # a built-in excluded directory, hidden or not
    write(tmp_path, ".env", "A=1\n")  # a secret, hidden or not
    assert paths(tmp_path) == ["a.py"]
    shown = discover(tmp_path, DiscoveryOptions(hidden=True))
    assert [f.path for f in shown.files] == [".editorconfig", ".github/workflows/ci.yml", "a.py", "pkg/.hidden.py"]
    assert shown.skipped == [(".env", "secret")]


def test_no_ignore_reads_no_ignore_file(tmp_path: Path) -> None:
    root = debian_like(tmp_path / "linux")
    write(root, "kernel/.ignore", "*.c\n")
    write(root, "kernel/.ranklensignore", "*\n")
    write(root, "node_modules/x.js")
    listed = paths(root, DiscoveryOptions(no_ignore=True))
    assert listed == ["Makefile", "README", "arch/x86/Makefile", "fs/ext4/inode.c", "kernel/fork.c", "mm/slab.c"]
    # exclude_globs are the caller's, not an ignore file: they still apply.
    assert "README" not in paths(root, DiscoveryOptions(no_ignore=True, exclude_globs=("README",)))


@needs_git
def test_no_ignore_in_git_mode_lists_what_git_ignores(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "a.py")
    write(repo, "debug.log")
    write(repo, "private.txt")
    (repo / ".git" / "info" / "exclude").write_text("private.txt\n")
    git(repo, "add", "a.py", ".gitignore")
    assert paths(repo) == ["a.py"]
    assert paths(repo, DiscoveryOptions(no_ignore=True)) == ["a.py", "debug.log", "private.txt"]


# --- explain: why one path is skipped or kept ----------------------------------------


def test_explain_names_the_ancestor_an_ignore_rule_matched(tmp_path: Path) -> None:
    root = debian_like(tmp_path / "linux")
    verdict = discovery.explain(root, "arch/x86/Makefile")
    assert not verdict.kept and verdict.via == "arch" and verdict.mode == "walk"
    assert str(verdict.rule) == ".gitignore:3: /*"
    assert discovery.explain(root, "arch/x86/Makefile", DiscoveryOptions(no_ignore=True)).kept
    assert discovery.explain(root, "arch").rule == verdict.rule
    assert discovery.explain(root, "") == discovery.Verdict("", True, True, mode="walk")


def test_explain_agrees_with_discover_on_every_rule(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    files = {
        "a.py": None,
        "x.log": ".gitignore:1: *.log",
        ".hidden.py": "hidden (name starts with a dot)",
        "conf/.env": "secret (secret file name)",
        "logo.png": "binary (known binary extension)",
        "node_modules/m/index.js": "excluded directory (node_modules)",
        "big.txt": "too large (over 10 bytes)",
    }
    for rel in files:
        write(tmp_path, rel, "x" * (50 if rel == "big.txt" else 3))
    opts = DiscoveryOptions(max_bytes=10)
    assert paths(tmp_path, opts) == ["a.py"]
    for rel, rule in files.items():
        verdict = discovery.explain(tmp_path, rel, opts)
        assert verdict.kept == (rule is None), rel
        assert (str(verdict.rule) if verdict.rule else None) == rule, rel
    assert discovery.explain(tmp_path, "node_modules/m/index.js").via == "node_modules"
    with pytest.raises(FileNotFoundError):
        discovery.explain(tmp_path, "missing.py")


@needs_git
def test_explain_asks_git_which_line_ignores_a_path(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "a.py")
    write(repo, "pkg/.gitignore", "# build output\n/gen/\n")
    write(repo, "pkg/gen/out.py")
    write(repo, "pkg/m.py")
    (repo / ".git" / "info" / "exclude").write_text("*.tmp\n")
    write(repo, "pkg/x.tmp")
    git(repo, "add", "a.py")
    verdict = discovery.explain(repo, "pkg/gen/out.py")
    assert verdict.mode == "git" and not verdict.kept
    assert verdict.rule == discovery.Rule("ignore", "pkg/.gitignore", 2, "/gen/")
    assert discovery.explain(repo, "pkg/x.tmp").rule == discovery.Rule("ignore", ".git/info/exclude", 1, "*.tmp")
    # From a root below the work tree's top, the ignore file is named relative to that root.
    assert discovery.explain(repo / "pkg", "gen/out.py").rule == discovery.Rule("ignore", ".gitignore", 2, "/gen/")
    assert discovery.explain(repo, "pkg/m.py").kept


@settings(max_examples=150, deadline=None)
@given(rules=st.lists(st.one_of(st.sampled_from(_PATTERNS), _built_pattern), min_size=4, max_size=12))
def test_an_ignore_file_asked_at_once_gives_its_patterns_verdicts(rules) -> None:
    from ranklens.core.discovery.ignore import _compile
    from ranklens.core.discovery.results import Rule

    spec = _compile((line, Rule("ignore", ".gitignore", n, line)) for n, line in enumerate(rules, start=1))
    if spec is None:
        return
    one_by_one = _compile((line, Rule("ignore", ".gitignore", n, line)) for n, line in enumerate(rules, start=1))
    one_by_one.any_full = None  # its patterns one by one, as before the at-once check
    folders = {rel.rsplit("/", i)[0] for rel in _TREE for i in range(1, rel.count("/") + 1)}
    for rel in [*_TREE, *folders, "a/b/c/d.txt", "deep/deep/x[1].txt"]:
        for is_dir in (False, True):
            assert spec.verdict(rel, is_dir) == one_by_one.verdict(rel, is_dir), (rules, rel, is_dir)
