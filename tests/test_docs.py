"""The user documentation holds together: the README stays short, and every relative link in
README.md, CHANGELOG.md and docs/**/*.md leads to a file that exists and, with a ``#fragment``
into a Markdown file, to a heading (or an explicit ``<a id>``) that file has, slugged as
GitHub slugs headings."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent

README_LIMIT = 12 * 1024

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
ANCHOR = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""", re.IGNORECASE)
# [text](target) and ![alt](target), the target up to whitespace or the closing bracket; the
# text may hold one level of brackets ([`x`][y] is not used here).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto: …


def documents() -> list[Path]:
    """The Markdown files whose links are checked."""
    return [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "tests" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): the rendered text lower-cased,
    every character that is not a letter, digit, underscore, hyphen or space dropped, each
    space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML renders as nothing here
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    text = "".join(ch for ch in text.lower() if ch.isalnum() or ch in "_- ")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every fragment a link into ``path`` may name: its headings' slugs, numbered as GitHub
    numbers repeats (``x``, ``x-1``, ``x-2``), and its explicit ``<a id>`` / ``<a name>``."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        out.update(ANCHOR.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """The relative link targets of ``path`` with their line numbers (code left out)."""
    out = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        targets = INLINE_LINK.findall(line)
        ref = REFERENCE.match(line)
        if ref:
            targets.append(ref.group(1))
        out.extend((number, t) for t in targets if not EXTERNAL.match(t))
    return out


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with each relative link of ``path``, one line each (none: all resolve)."""
    problems = []
    for number, target in links(path):
        where = f"{path.relative_to(root)}:{number}: {target}"
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        if fragment and dest.suffix == ".md" and unquote(fragment) not in anchors(dest):
            problems.append(f"{where}: no heading #{fragment} in {dest.name}")
    return problems


def test_the_readme_stays_under_12_kb() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; keep it <= {README_LIMIT}"


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_documents_are_found_and_link_somewhere() -> None:
    docs = documents()
    assert ROOT / "docs" / "evaluation.md" in docs and ROOT / "docs" / "benchmarks.md" in docs
    assert ROOT / "docs" / "appendix" / "development-log.md" in docs
    assert sum(len(links(d)) for d in docs) > 30  # the checker sees the links it checks


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Measuring and tuning", "measuring-and-tuning"),
        ("ranklens eval and tune", "ranklens-eval-and-tune"),
        ("With the optional `deep` arm", "with-the-optional-deep-arm"),
        ("The span set: which file, then which chunk (issue #18)", "the-span-set-which-file-then-which-chunk-issue-18"),
        ("At scale: the Linux kernel", "at-scale-the-linux-kernel"),
        (
            "History: retrieval quality, step by step (before the ranking stage)",
            "history-retrieval-quality-step-by-step-before-the-ranking-stage",
        ),
        ("[Unreleased]", "unreleased"),
        ("0.1.0 → 0.2.0", "010--020"),
        ("`core.settings.FusionSettings`", "coresettingsfusionsettings"),
        ("The *file step* and top_k", "the-file-step-and-top_k"),
    ],
)
def test_slugs_follow_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        '# Guide\n\n## Install it\n\n## Install it\n\n<a id="extra"></a>Text.\n', encoding="utf-8"
    )
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Demo\n\n"
        "[ok](docs/guide.md) [ok](docs/guide.md#install-it) [ok](docs/guide.md#install-it-1)\n"
        "[ok](docs/guide.md#extra) [ok](#demo) [ok](https://example.com/missing) ![ok](docs)\n"
        "[gone](docs/missing.md) [no heading](docs/guide.md#install) [no self](#nowhere)\n"
        "`[in code](docs/ignored.md)`\n\n"
        "```\n[in a fence](docs/also-ignored.md)\n```\n\n"
        "[ref]: docs/ref-missing.md\n",
        encoding="utf-8",
    )
    assert broken_links(readme, tmp_path) == [
        "README.md:5: docs/missing.md: no such file",
        "README.md:5: docs/guide.md#install: no heading #install in guide.md",
        "README.md:5: #nowhere: no heading #nowhere in README.md",
        "README.md:12: docs/ref-missing.md: no such file",
    ]


SUMMARY_HEADINGS = ["What the figures are", "The headline figures", "Reproduce them"]
PAGE = 6_000  # bytes: about a page of prose and one table


@pytest.mark.parametrize("name", ["evaluation.md", "benchmarks.md"])
def test_the_measurement_pages_open_with_a_one_page_summary(name: str) -> None:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    level2 = [m.group(2) for _, line in prose_lines(text) if (m := HEADING.match(line)) and m.group(1) == "##"]
    assert level2[:3] == SUMMARY_HEADINGS, f"docs/{name} should open with {SUMMARY_HEADINGS}"
    assert any(h.startswith("Appendix") for h in level2[3:]), f"docs/{name} keeps its lab detail under an Appendix"
    summary = text.split(f"\n## {level2[3]}\n")[0]
    assert len(summary.encode()) <= PAGE, f"docs/{name}'s summary is {len(summary.encode())} bytes; keep it a page"
    assert "#appendix" in summary, f"docs/{name}'s summary should point to its appendix"


def test_the_changelog_is_for_users() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = text.split("\n## [Unreleased]\n", 1)[1].split("\n## ", 1)[0]
    for part in ("### Added", "### Changed", "### Fixed"):
        assert f"\n{part}\n" in f"\n{unreleased}", f"CHANGELOG.md's [Unreleased] should have {part}"
    entries = [e for e in re.split(r"\n(?=- )", text) if e.startswith("- ")]
    long = [e.splitlines()[0] for e in entries if len(e.strip().splitlines()) > 8]
    assert long == [], "a few lines a change; link the measurements instead of pasting them"
    assert "docs/appendix/development-log.md" in text


def test_the_readme_tables_name_no_commit() -> None:
    rows = [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    named = [r for r in rows if re.search(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", r)]
    assert named == [], "name a row by what a user gets, not by a commit"
