"""Code-aware priors: a named, explained re-weighting of the fused hits, after fusion.

The question a user types is usually about the product's code, so a hit in a test file, an
example, a README/CHANGELOG-style project file or a configuration/data file is less likely to
be the answer than a hit of equal fused score in source code, unless the query asks for tests,
examples, docs or that kind of file. Each rule is plain data: a name, the reason shown to the
user, a predicate over the hit's path (and the language its name implies), the factor its score
is multiplied by, and the query words that lift it. Rules only look at the path, so their
verdicts are cached per path.

Documentation pages themselves (``docs/deploy.md``, a guide) are *not* demoted: on the shipped
labeled sets that cost more than it gained (a question about operations is answered by a
doc page). Only project files known by name (README, CHANGELOG, LICENSE …) are: they summarise
the whole project, so they share words with most questions. Nothing is demoted for being in a
folder named ``doc/`` or ``docs/``, so a Go package named ``doc`` keeps its weight.

:func:`apply_priors` multiplies each hit's fused score by the factors of the rules that match
it and are not lifted, re-sorts with the consolidation tie-break (score desc, path, start, end,
docid), renumbers ranks and records on each hit what was applied (``ConsolidatedHit.priors``)
with the pre-prior score in ``fused_score``. The factors were chosen by measurement on the
shipped labeled sets (see the README, "Priors").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ..base.types import AppliedPrior, ConsolidatedHit
from ..text.languages import language_for
from ..text.tokenize import code_tokens


@dataclass(frozen=True)
class PriorRule:
    """One prior: ``factor`` multiplies the score of hits whose path matches ``predicate``.

    ``factor`` < 1 demotes, > 1 boosts. Any of ``lifted_by`` among the query's words (code
    tokens: identifiers whole and split, lowercased) switches the rule off for that query.
    """

    name: str
    reason: str
    factor: float
    predicate: Callable[[str, str], bool]  # (path, language) -> matches
    lifted_by: frozenset[str] = frozenset()


# --------------------------------------------------------------------------- predicates

#: Folders that hold tests (or their data) in the usual layouts: python ``tests/``, Java
#: ``src/test/``, Ruby ``spec/`` and ``test/``, JavaScript ``__tests__/``, Go ``testdata/``,
#: Rust and C/C++ ``tests/`` …
TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "__tests__",
        "__mocks__",
        "spec",
        "specs",
        "testdata",
        "test_data",
        "unittests",
        "unit_tests",
        "integration_tests",
        "e2e",
    }
)

#: Test file names per language (the basename, matched whole).
_JS = r"(?:m|c)?[jt]sx?"
TEST_FILES: dict[str, re.Pattern[str]] = {
    lang: re.compile(pattern)
    for lang, pattern in {
        # test_*.py, *_test.py, conftest.py, Django's tests.py
        "python": r"test_.*\.pyi?|.*_test\.py|conftest\.py|tests?\.py",
        # *_test.go (including example_test.go)
        "go": r".*_test\.go",
        # *.test.js, *.spec.ts, foo-spec.tsx, foo_test.js …
        "javascript": rf".*[._-](?:test|spec)s?\.{_JS}",
        "typescript": rf".*[._-](?:test|spec)s?\.{_JS}",
        "tsx": rf".*[._-](?:test|spec)s?\.{_JS}",
        # Rust keeps integration tests in tests/ (a folder rule); tests.rs holds unit tests.
        "rust": r"tests?\.rs|.*_tests?\.rs",
        # JUnit: *Test.java, *Tests.java, *TestCase.java, *IT.java, Test*.java
        "java": r".*(?:Test|Tests|TestCase|IT)\.java|Test[A-Z0-9_].*\.java",
        # RSpec *_spec.rb, minitest *_test.rb and test_*.rb
        "ruby": r".*_(?:spec|test)\.rb|test_.*\.rb",
        # *_test.c, *_unittest.cc, *_tests.cpp, test_*.c, foo-test.c
        "c": r".*[_-](?:unit)?tests?\.[ch]|test_.*\.[ch]",
        "cpp": r".*[_-](?:unit)?tests?\.(?:cc|cpp|cxx|c\+\+|hpp|hh|h)|test_.*\.(?:cc|cpp|cxx)",
        # JUnit/Kotest, ScalaTest/MUnit, xUnit/NUnit, XCTest, PHPUnit
        "kotlin": r".*(?:Test|Tests|Spec|IT)\.kts?|Test[A-Z0-9_].*\.kts?",
        "scala": r".*(?:Test|Tests|Spec|Suite)\.scala",
        "csharp": r".*(?:Test|Tests)\.cs",
        "swift": r".*(?:Test|Tests)\.swift",
        "php": r".*Test\.php",
        # Hspec *Spec.hs, tasty/HUnit *Test.hs and *Tests.hs
        "haskell": r".*(?:Spec|Test|Tests)\.hs",
        # ExUnit *_test.exs
        "elixir": r".*_test\.exs",
        # busted *_spec.lua, *_test.lua, test_*.lua
        "lua": r".*_(?:spec|test)\.lua|test_.*\.lua",
        # Zig keeps its tests inline (test blocks); files of tests only: tests.zig, *_test.zig
        "zig": r"tests?\.zig|.*_tests?\.zig|test_.*\.zig",
        # Bats *.bats and *_test.sh (not test_*.sh: bats-core's own library is test_functions.bash)
        "shell": r".*\.bats|.*_test\.(?:sh|bash)",
    }.items()
}

#: Folders of example, sample and demo code.
EXAMPLE_DIRS = frozenset({"example", "examples", "_examples", "sample", "samples", "demo", "demos"})
#: Reverse-domain package roots: ``com/example/`` is a Java package name, not an examples folder.
PACKAGE_ROOTS = frozenset({"com", "org", "net", "io", "dev", "edu", "gov", "co", "me", "app"})

#: Project files known by name, with any or no extension: README, CHANGELOG, LICENSE …
PROJECT_DOC_NAMES = frozenset(
    {
        "readme",
        "changelog",
        "changes",
        "history",
        "news",
        "releases",
        "release_notes",
        "license",
        "licence",
        "copying",
        "notice",
        "authors",
        "contributors",
        "contributing",
        "code_of_conduct",
        "security",
        "maintainers",
        "upgrading",
    }
)
#: What such a file must be to count: prose, not code (``history.py`` is code).
PROSE_LANGUAGES = frozenset({"markdown", "rst", "text"})

#: Configuration, data, markup and template files (by language, then by extension or name).
NON_CODE_LANGUAGES = frozenset({"json", "yaml", "toml", "ini", "xml", "html"})
NON_CODE_EXTENSIONS = frozenset(
    {
        "csv",
        "tsv",
        "jsonl",
        "ndjson",
        "lock",
        "log",
        "properties",
        "plist",
        "conf",
        "config",
        "env",
        "sum",
        "mod",
        "j2",
        "jinja",
        "jinja2",
        "tmpl",
        "tpl",
        "mustache",
        "hbs",
        "handlebars",
        "ejs",
        "erb",
        "liquid",
        "njk",
        "twig",
        "snap",
        "pbtxt",
        "textproto",
        "webmanifest",
    }
)
_REQUIREMENTS = re.compile(r"(?:requirements|constraints)[\w.-]*\.(?:txt|in)")


def _parts(path: str) -> tuple[list[str], str]:
    parts = path.split("/")
    return [p.lower() for p in parts[:-1]], parts[-1]


def is_test(path: str, language: str) -> bool:
    """A test file by its folder (tests/, spec/, __tests__/ …) or its language's naming convention."""
    dirs, base = _parts(path)
    if any(d in TEST_DIRS for d in dirs):
        return True
    pattern = TEST_FILES.get(language)
    return bool(pattern and pattern.fullmatch(base))


def is_example(path: str, language: str) -> bool:
    """A file under an examples/, samples/ or demo/ folder (``com/example/`` is a package name)."""
    dirs, _ = _parts(path)
    return any(d in EXAMPLE_DIRS and (i == 0 or dirs[i - 1] not in PACKAGE_ROOTS) for i, d in enumerate(dirs))


def _extension(base: str) -> str:
    stem, dot, ext = base.rpartition(".")
    return ext.lower() if dot and stem else ""


def is_non_code(path: str, language: str) -> bool:
    """Configuration, data, markup or a template: JSON, YAML, TOML, INI, XML/SVG, HTML, CSV, lock files …"""
    if language in NON_CODE_LANGUAGES:
        return True
    if language != "text":  # a language ranklens knows as code (or cmake, docker, make …)
        return False
    _, base = _parts(path)
    name = base.lower()
    if _REQUIREMENTS.fullmatch(name):
        return True
    ext = _extension(name)
    if ext in NON_CODE_EXTENSIONS:
        return True
    return name.startswith(".") and name.count(".") == 1  # .gitignore, .editorconfig …


#: Folders of other projects' code copied in.
VENDORED_DIRS = frozenset(
    {
        "vendor",
        "vendored",
        "_vendor",
        "third_party",
        "third-party",
        "thirdparty",
        "node_modules",
        "bower_components",
        "single_include",
    }
)
#: Files a tool wrote: minified bundles, protobuf/gRPC output, designer and ``*.generated.*`` files.
_GENERATED = re.compile(
    r".*(?:\.min\.(?:js|css)|\.pb\.(?:go|cc|h)|_pb2(?:_grpc)?\.pyi?|\.g\.dart|\.designer\.cs"
    r"|[._-]generated\.\w+|\.gen\.go|\.d\.ts)"
)


def is_vendored(path: str, language: str) -> bool:
    """Another project's code copied in (``vendor/``, ``third_party/``, ``single_include/`` …)."""
    dirs, _ = _parts(path)
    return any(d in VENDORED_DIRS for d in dirs)


def is_generated(path: str, language: str) -> bool:
    """A file a tool wrote: ``*.min.js``, ``*.pb.go``, ``*_pb2.py``, ``*.designer.cs``,
    ``*.generated.*``, TypeScript declarations (``*.d.ts``) …"""
    _, base = _parts(path)
    return bool(_GENERATED.fullmatch(base.lower()))


def is_project_doc(path: str, language: str) -> bool:
    """A README, CHANGELOG, LICENSE, CONTRIBUTING … file (by name, in any folder), when it is prose."""
    if language not in PROSE_LANGUAGES:
        return False
    _, base = _parts(path)
    return base.lower().partition(".")[0] in PROJECT_DOC_NAMES


# --------------------------------------------------------------------------- the rules

TEST_WORDS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "tested",
        "unittest",
        "unittests",
        "pytest",
        "spec",
        "specs",
        "fixture",
        "fixtures",
        "conftest",
        "mock",
        "mocks",
    }
)
EXAMPLE_WORDS = frozenset({"example", "examples", "sample", "samples", "demo", "demos"})
DOC_WORDS = frozenset(
    {
        "doc",
        "docs",
        "documentation",
        "documented",
        "readme",
        "changelog",
        "license",
        "licence",
        "licensing",
        "contributing",
        "markdown",
        "guide",
        "manual",
        "tutorial",
        "faq",
    }
)
VENDORED_WORDS = frozenset({"vendor", "vendored", "vendoring", "third", "party", "thirdparty", "bundled"})
GENERATED_WORDS = frozenset(
    {"generated", "generate", "codegen", "minified", "protobuf", "proto", "declaration", "declarations"}
)
NON_CODE_WORDS = frozenset(
    {
        "config",
        "configs",
        "configuration",
        "yaml",
        "yml",
        "json",
        "toml",
        "ini",
        "xml",
        "html",
        "csv",
        "template",
        "templates",
        "lockfile",
    }
)

#: The priors, applied in this order (their factors multiply when several match).
RULES: tuple[PriorRule, ...] = (
    PriorRule(
        "tests",
        "test code (tests/, spec/, __tests__/, test_*.py, *_test.go, *.spec.ts, *Test.java …); "
        "lifted when the query mentions tests",
        0.25,
        is_test,
        TEST_WORDS,
    ),
    PriorRule(
        "examples",
        "example, sample or demo code; lifted when the query mentions examples",
        0.5,
        is_example,
        EXAMPLE_WORDS,
    ),
    PriorRule(
        "project-docs",
        "README, CHANGELOG, LICENSE-style project file: it summarises the whole project, so it "
        "shares words with most questions without answering them; lifted when the query mentions docs",
        0.25,
        is_project_doc,
        DOC_WORDS,
    ),
    PriorRule(
        "non-code",
        "configuration, data, markup or template file (JSON, YAML, TOML, XML, HTML, lock files …); "
        "lifted when the query names such a file type",
        0.5,
        is_non_code,
        NON_CODE_WORDS,
    ),
    PriorRule(
        "vendored",
        "another project's code copied in (vendor/, third_party/, single_include/ …); lifted "
        "when the query mentions vendored code",
        0.5,
        is_vendored,
        VENDORED_WORDS,
    ),
    PriorRule(
        "generated",
        "a file a tool wrote (*.min.js, *.pb.go, *_pb2.py, *.generated.*, *.d.ts …); lifted "
        "when the query mentions generated code",
        0.5,
        is_generated,
        GENERATED_WORDS,
    ),
)
#: Every query word that lifts one of the shipped rules.
_LIFTERS: frozenset[str] = frozenset().union(*(rule.lifted_by for rule in RULES))


@lru_cache(maxsize=1 << 16)
def _matching(path: str, rules: tuple[PriorRule, ...]) -> tuple[PriorRule, ...]:
    language = language_for(path)
    return tuple(rule for rule in rules if rule.predicate(path, language))


@lru_cache(maxsize=1 << 16)
def _matching_default(path: str) -> tuple[PriorRule, ...]:
    # Keyed on the path alone: hashing the rules (frozen dataclasses) per call cost more
    # than the lookup.
    return _matching(path, RULES)


def matching_rules(path: str, rules: Sequence[PriorRule] = RULES) -> tuple[PriorRule, ...]:
    """The rules whose predicate holds for ``path`` (whatever the query)."""
    return _matching_default(path) if rules is RULES else _matching(path, tuple(rules))


def query_words(query: str | None) -> frozenset[str]:
    """The words of a query that can lift a rule (its code tokens)."""
    return frozenset(code_tokens(query or ""))


def applied_to(path: str, words: frozenset[str], rules: Sequence[PriorRule] = RULES) -> list[AppliedPrior]:
    """What the priors do to a hit at ``path`` for a query with these words.

    One entry per matching rule: its factor, or factor 1.0 with ``lifted_by`` naming the
    query word that lifted it.
    """
    out = []
    for rule in matching_rules(path, rules):
        lift = min(rule.lifted_by & words) if rule.lifted_by & words else None
        out.append(AppliedPrior(rule.name, rule.reason, 1.0 if lift else rule.factor, lift))
    return out


@lru_cache(maxsize=1 << 16)
def _applied_default(path: str, lifting: frozenset[str]) -> tuple[AppliedPrior, ...]:
    # Kept across queries: what the shipped rules do to a path depends on the path and on the
    # query words that lift a rule, which most queries have none of.
    return tuple(applied_to(path, lifting, RULES))


def factor_of(applied: Iterable[AppliedPrior]) -> float:
    """The product of the applied factors (1.0 for none)."""
    f = 1.0
    for p in applied:
        f *= p.factor
    return f


def adjuster(
    query: str | None, enabled: bool = True, rules: Sequence[PriorRule] = RULES
) -> Callable[[str], tuple[float, list[AppliedPrior]]]:
    """``path -> (factor, applied priors)`` for one query, worked out once per path.

    ``enabled=False`` gives factor 1.0 and no priors for every path.
    """
    words = query_words(query) if enabled else frozenset()
    by_path: dict[str, tuple[float, list[AppliedPrior]]] = {}
    shipped = rules is RULES
    lifting = words & _LIFTERS

    def adjust(path: str) -> tuple[float, list[AppliedPrior]]:
        found = by_path.get(path)
        if found is None:
            if not enabled:
                applied = []
            elif shipped:
                applied = list(_applied_default(path, lifting))
            else:
                applied = applied_to(path, words, rules)
            found = by_path[path] = (factor_of(applied), applied)
        return found

    return adjust


def apply_priors(
    hits: Sequence[ConsolidatedHit],
    query: str | None,
    enabled: bool = True,
    rules: Sequence[PriorRule] = RULES,
) -> list[ConsolidatedHit]:
    """The hits re-scored by the priors, best first, ``rank`` renumbered from 1.

    Each returned hit is a copy: ``fused_score`` holds the score before the priors, ``score``
    the score after, ``priors`` what was applied (lifted rules listed with factor 1.0 and the
    lifting word). ``enabled=False`` returns copies with the fused order, ``fused_score ==
    score`` and no priors. Ties are broken by (path, start, end, docid), as consolidation does.
    (The engine applies the priors in its ranking stage: :class:`core.query.ranking.Stage` with an
    :func:`adjuster`.)
    """
    adjust = adjuster(query, enabled, rules)
    out = []
    for hit in hits:
        base = hit.score if hit.fused_score is None else hit.fused_score
        factor, applied = adjust(hit.path)
        out.append(replace(hit, score=base * factor, fused_score=base, priors=list(applied)))
    out.sort(key=lambda h: (-h.score, h.path, h.start_line, h.end_line, h.docid))
    for rank, hit in enumerate(out, start=1):
        hit.rank = rank
    from .labels import label  # confidence follows the final scores

    label(out)
    return out


def describe(rules: Sequence[PriorRule] = RULES) -> list[dict]:
    """The rules as data (name, reason, factor, lifting words), for help texts and reports."""
    return [{"name": r.name, "reason": r.reason, "factor": r.factor, "lifted_by": sorted(r.lifted_by)} for r in rules]
