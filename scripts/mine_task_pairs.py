"""Mine (question, code) pairs shaped like the chunk step's task: the training data of the
in-file encoder (``scripts/train_encoder.py``).

The static model's pairs (``scripts/mine_pairs.py``) match a docstring's first line to code
with its comments removed. The chunk step's task is a user's question asked of chunks that
keep their comments, so every pair here keeps the code as the arms see it (breadcrumb, then
the definition with its comments, up to :data:`CODE_LINES` lines), less only the text the
description was taken from. Three sources of descriptions (``src``):

- ``doc``: a definition's docstring or doc comment, first paragraph (as ``mine_pairs.py``);
- ``test``: a test's name in words and its docstring, or a JS/TS/Ruby ``it("...")`` title,
  paired with the one function of the repository the test calls that its words point at
  ("test redirect drops the authorization header" -> the redirect code);
- ``comment``: a comment block inside a function body (at least :data:`MIN_WORDS` words),
  paired with that function, the comment removed from it.

The definitions of one file keep their ``file`` id, so the trainer's batches hold a file's
pairs together: a definition's siblings are its negatives, the choice inside a file. A test
pair's ``file`` is its target's file. Excluded as in ``mine_pairs.py`` (the exclusion list,
vendored folders, files byte-identical to the benchmark's). Output: ``pairs.jsonl`` and
``manifest.json`` (each repository's commit and pairs per language and source, the pairs'
SHA-256). The same snapshots give the same bytes.

    python scripts/mine_task_pairs.py --mirror /work/.mirror --out /tmp/ranklens-task-pairs \
        --repos-from docs/appendix/in-file-encoder-manifest.json   # the measured data, to the byte
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "scripts"))

from mine_pairs import (  # noqa: E402
    _BOILERPLATE,
    _COMMENT_MARK,
    _STOPWORDS,
    _WORD,
    MAX_DESC_WORDS,
    MIN_WORDS,
    benchmark_hashes,
    code_without_doc,
    description,
    excluded_names,
    is_excluded,
    read_texts,
    snapshot_dir,
    snapshot_files,
    unseen,
    words_of,
    write_pairs,
)

from ranklens.core.chunking import definitions  # noqa: E402

SEED = 20261206
#: The held-out check's repositories (every one ``evals/heldout/repos.json`` names) and the
#: large one the first-minute figures are measured on: never training data.
HELD_OUT = frozenset(
    {r["repo"] for r in json.loads((REPO_ROOT / "evals" / "heldout" / "repos.json").read_text())}
    | {"urllib3/urllib3", "OpenFeign/feign", "sindresorhus/ky", "PrefectHQ/prefect"}
)
#: The code side: a definition's first lines (the chunk step shows a unit whole up to 80).
CODE_LINES = 80
MAX_FILES = 2_000
#: At most this many pairs a repository and source, so no one project or source dominates.
MAX_PAIRS = {"doc": 1_500, "test": 1_500, "comment": 1_000}
#: Function names too common to say which function a test is about.
_COMMON_CALLS = frozenset(
    "assert assertEqual assertTrue assertFalse assertThat expect equal equals toBe toEqual len str int "
    "print append get set put add run call apply new make list dict map filter require describe "
    "it test should format sprintf printf println errorf fatalf fatal error log close open read write "
    "then push join split string keys values items update setUp tearDown fixture mock spy".split()
)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|spec|specs|__tests__|testing)/|(^|/)test_[^/]*$|_test\.\w+$|Tests?\.\w+$|\.(test|spec)\.\w+$"
)
_TEST_NAME = re.compile(r"^(test_?|Test|should_?|it_?)", re.I)
_IT_TITLE = re.compile(r"""\b(?:it|test|specify)\s*\(\s*(['"`])((?:(?!\1).){12,160})\1""")
_RUBY_IT = re.compile(r"""^\s*(?:it|specify|scenario)\s+(['"])((?:(?!\1).){12,160})\1""", re.M)
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^<>()]*>)?\s*\(")
_SPLIT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def test_words(name: str) -> str:
    """A test's name as words: ``test_redirect_dropsAuth`` -> ``redirect drops auth``."""
    name = _TEST_NAME.sub("", name.rsplit(".", 1)[-1])
    words = [w.lower() for part in re.split(r"[_$]+", name) for w in _SPLIT.findall(part)]
    return " ".join(words)


def comment_blocks(text: str) -> list[tuple[str, set[int]]]:
    """The comment blocks inside a definition's body (after its first line): each block's
    words and its line numbers (0-based within ``text``)."""
    out: list[tuple[str, set[int]]] = []
    block: list[str] = []
    lines_of: set[int] = set()
    for n, line in enumerate(text.splitlines()):
        mark = _COMMENT_MARK.match(line) if n > 0 else None
        if mark and not line.lstrip().startswith(('"""', "'''")):
            block.append(line[mark.end() :].strip().strip("*/").strip())
            lines_of.add(n)
            continue
        if block:
            out.append((" ".join(block), lines_of))
        block, lines_of = [], set()
    if block:
        out.append((" ".join(block), lines_of))
    return out


def clean_desc(text: str) -> str | None:
    text = re.sub(r"\s+", " ", text).strip()
    if len(_WORD.findall(text)) < MIN_WORDS or _BOILERPLATE.search(text) or "http" in text:
        return None
    if sum(c in "{}();=<>[]" for c in text) > 3:  # commented-out code, not prose
        return None
    return " ".join(text.split()[:MAX_DESC_WORDS])


def code_side(context: str, body: str) -> str | None:
    lines = body.splitlines()[:CODE_LINES]
    if len(lines) < 2:
        return None
    return f"{context}\n" + "\n".join(lines)


def mine_repo(git_dir: Path, repo: str, bench: set[str], rng: random.Random):
    commit, entries = snapshot_files(git_dir, ("text", "markdown", "json", "yaml", "toml", "html", "css"))
    entries.sort()
    rng.shuffle(entries)
    entries = entries[:MAX_FILES]
    source_defs = []  # (path, lang, definition)
    tests = []  # (path, lang, description, body)
    for path, lang, text in read_texts(git_dir, entries, bench):
        is_test = bool(_TEST_PATH.search(path))
        defs = definitions(path, text, language=lang)
        if not is_test:
            source_defs.extend((path, lang, d) for d in defs if d.symbol)
            continue
        for d in defs:
            leaf = d.symbol.rsplit(".", 1)[-1] if d.symbol else ""
            if leaf and _TEST_NAME.match(leaf):
                desc = test_words(leaf)
                doc = description(d.docstring) if d.docstring else None
                tests.append((path, lang, f"{desc}. {doc}" if doc else desc, d.text))
        titled = list(_IT_TITLE.finditer(text)) + list(_RUBY_IT.finditer(text))
        titled.sort(key=lambda m: m.start())
        for i, m in enumerate(titled):
            end = titled[i + 1].start() if i + 1 < len(titled) else min(len(text), m.end() + 3000)
            tests.append((path, lang, m.group(2), text[m.end() : end]))

    by_name: dict[str, list] = defaultdict(list)
    for item in source_defs:
        by_name[item[2].symbol.rsplit(".", 1)[-1]].append(item)
    pairs: dict[str, list[dict]] = {"doc": [], "test": [], "comment": []}

    def add(src: str, lang: str, path: str, desc: str | None, code: str | None, symbol: str) -> None:
        if desc and code and len(pairs[src]) < MAX_PAIRS[src]:
            pairs[src].append(
                {
                    "lang": lang,
                    "repo": repo,
                    "file": f"{repo}:{path}",
                    "symbol": symbol,
                    "src": src,
                    "desc": desc,
                    "code": code,
                }
            )

    for path, lang, d in source_defs:
        if d.docstring:
            desc = description(d.docstring)
            if desc and desc.split(" ", 1)[0].strip("`'\"():") == d.symbol.rsplit(".", 1)[-1]:
                rest = desc.split(" ", 1)[1] if " " in desc else ""
                desc = rest if len(_WORD.findall(rest)) >= MIN_WORDS else None
            if desc:
                add("doc", lang, path, desc, code_side(d.context, code_without_doc(d.text, d.docstring)), d.symbol)
        blocks = [(clean_desc(words), lines) for words, lines in comment_blocks(d.text)]
        blocks = [(w, lines) for w, lines in blocks if w]
        if blocks:
            words, lines = blocks[rng.randrange(len(blocks))]
            body = "\n".join(line for n, line in enumerate(d.text.splitlines()) if n not in lines)
            add("comment", lang, path, words, code_side(d.context, body), d.symbol)

    rng.shuffle(tests)
    for _path, _lang, desc, body in tests:
        desc = clean_desc(desc) if len(_WORD.findall(desc)) >= 3 else None
        if not desc or len(desc.split()) < 3:
            continue
        said = {w.lower() for w in _WORD.findall(desc) if len(w) > 2} - _STOPWORDS
        best, best_overlap = None, 0
        callees = {c for c in _CALL.findall(body) if len(c) > 3 and c not in _COMMON_CALLS}
        found = [by_name[c][0] for c in sorted(callees) if len(by_name.get(c, ())) == 1]
        for item in found:
            overlap = len(words_of(item[2].symbol.rsplit(".", 1)[-1]) & said)
            if overlap > best_overlap:
                best, best_overlap = item, overlap
        if best is None and len(found) == 1:
            best = found[0]
        if best is None:
            continue
        tpath, tlang, d = best
        add("test", tlang, tpath, desc, code_side(d.context, d.text), d.symbol)
    return commit, [p for src in ("doc", "test", "comment") for p in pairs[src]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"), help="folder of fetched snapshots")
    parser.add_argument("--out", type=Path, default=Path("/tmp/ranklens-task-pairs"))
    parser.add_argument("--exclusions", type=Path, default=REPO_ROOT.parent / "shared/bench/training-exclusions.txt")
    parser.add_argument("--bench", type=Path, default=REPO_ROOT.parent / "shared/bench/repos.tar.xz")
    parser.add_argument(
        "--repo", action="append", help="mine only these owner/name (repeatable); default: every snapshot"
    )
    parser.add_argument(
        "--repos-from",
        type=Path,
        help="mine the repositories a manifest lists (docs/appendix/in-file-encoder-manifest.json: the measured data)",
    )
    args = parser.parse_args(argv)
    if not args.exclusions.exists():
        print(f"mine_task_pairs: no exclusion list at {args.exclusions}", file=sys.stderr)
        return 2
    exclusions = excluded_names(args.exclusions)
    bench = benchmark_hashes(args.bench)
    if args.repos_from:
        args.repo = [r["repo"] for r in json.loads(args.repos_from.read_text())["repositories"]]
    repos = args.repo or sorted(
        p.name.replace("+", "/", 1) for p in args.mirror.iterdir() if p.is_dir() and "+" in p.name
    )
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {"seed": SEED, "repositories": [], "missing": [], "excluded": []}
    seen: set[str] = set()
    all_pairs = []
    for repo in repos:
        if is_excluded(repo, exclusions) or repo in HELD_OUT:
            manifest["excluded"].append(repo)
            continue
        git_dir = snapshot_dir(args.mirror, repo)
        if git_dir is None:
            manifest["missing"].append(repo)
            continue
        commit, pairs = mine_repo(git_dir, repo, bench, random.Random(f"{SEED}:{repo}"))
        kept = unseen(pairs, seen)
        all_pairs.extend(kept)
        per = Counter(f"{p['lang']}/{p['src']}" for p in kept)
        manifest["repositories"].append({"repo": repo, "commit": commit, "pairs": dict(sorted(per.items()))})
        print(f"{repo:45s} {commit[:10]} {len(kept):6d} pairs {dict(Counter(p['src'] for p in kept))}", flush=True)
    write_pairs(args.out, all_pairs, manifest, {"pairs_per_source": "src"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
