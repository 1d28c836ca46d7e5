"""The ranking stage (core.query.ranking): one test per signal, then the stage through the engine."""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace

import pytest

from ranklens.core.base.types import Hit, make_docid
from ranklens.core.engine import Engine
from ranklens.core.query import consolidate, fusion
from ranklens.core.query.labels import label_hits
from ranklens.core.query.priors import adjuster
from ranklens.core.query.ranking import DEFAULT_PARAMS, Params, Stage, rank_files
from ranklens.core.text.names import name_parts, path_words, shape


def hit(arm, path, start, end, rank, symbol=""):
    return Hit(arm, make_docid(path, start, end), path, start, end, rank, 1.0, path, None, None, symbol)


def fuse(rankings, query, params=DEFAULT_PARAMS, k=5.0, limit=None):
    stage = Stage(query, adjuster(query), params)
    fused = fusion.fuse(consolidate.group(rankings, False), None, k)
    return label_hits(fused, rank_files(fused, stage), None, limit)


#: Every signal off: each test turns on the one it is about.
NONE = Params(
    definition=0,
    path=0,
    name_coverage=0,
    file_evidence=0,
    coverage=0,
    diversity=1.0,
    top_file_diversity=1.0,
    depth=1.0,
    name_length=1.0,
)


# ----------------------------------------------------------------------------- the query


@pytest.mark.parametrize(
    "query, lookup, names",
    [
        ("TypeAdapter", True, {"TypeAdapter"}),
        ("Rails::Engine", True, {"Rails::Engine", "Engine"}),
        ("basic_format_args", True, {"basic_format_args"}),
        ("formatter", True, {"formatter"}),
        ("how JsonConvert serializes objects", False, {"JsonConvert"}),
        ("how Picker:find opens a window", False, {"Picker:find", "find"}),
        ("how beforeAll hooks run", False, {"beforeAll"}),
        ("how the router dispatches requests", False, set()),
    ],
)
def test_the_query_shape_names_its_identifiers(query, lookup, names):
    s = shape(query)
    assert s.lookup is lookup and set(s.names) == names


def test_keywords_drop_stop_words_and_short_words():
    assert shape("how does the async HTTP client session work").keywords == {"async", "http", "client", "session"}


@pytest.mark.parametrize(
    "a, b, alike",
    [
        ("dependency", "dependencies", True),
        ("middleware", "middlewares", True),
        ("serializer", "serialization", True),
        ("route", "router", True),
        ("config", "configuration", True),
        ("parse", "parsing", True),
        ("request", "require", False),
        ("compose", "component", False),
        ("run", "runner", False),
    ],
)
def test_path_words_match_in_another_form(a, b, alike):
    from ranklens.core.text.names import _alike

    assert _alike(a, b) is alike and _alike(b, a) is alike


def test_path_words_are_the_stem_and_folder_whole_and_split():
    assert path_words("aiohttp/web_middlewares.py") == {"web_middlewares", "web", "middlewares", "aiohttp"}
    assert path_words("src/Illuminate/Routing/Router.php") == {"router", "routing"}


# ----------------------------------------------------------------------------- each signal


def test_definition_a_bare_identifier_puts_its_definition_first():
    rankings = {
        "bm25": [
            hit("bm25", "client.py", 1, 40, 1),
            hit("bm25", "uses.py", 1, 40, 2),
            hit("bm25", "session.py", 10, 40, 3, "Session request"),
        ],
    }
    out = fuse(rankings, "Session")
    assert out[0].path == "session.py"
    [signal] = [s for s in out[0].signals if s.name == "definition"]
    assert "Session" in signal.reason and signal.boost > 0
    # the file named after the symbol gets the stem bonus over another file defining it
    rankings["bm25"].append(hit("bm25", "other.py", 1, 10, 4, "Session"))
    by_path = {h.path: h for h in fuse(rankings, "Session")}
    boost = {p: sum(s.boost for s in h.signals if s.name == "definition") for p, h in by_path.items()}
    assert boost["session.py"] == pytest.approx(boost["other.py"] * DEFAULT_PARAMS.stem_bonus)


def test_definition_a_capitalised_name_must_match_exactly():
    rankings = {
        "bm25": [hit("bm25", "a.java", 1, 9, 1, "typeAdapter"), hit("bm25", "TypeAdapter.java", 1, 9, 2, "TypeAdapter")]
    }
    out = fuse(rankings, "TypeAdapter")
    assert out[0].path == "TypeAdapter.java"
    assert not any(s.name == "definition" for s in out[1].signals)
    # an all-lowercase lookup matches in any case
    lower = fuse({"bm25": [hit("bm25", "a.h", 1, 9, 1), hit("bm25", "b.h", 1, 9, 2, "Formatter")]}, "formatter")
    assert lower[0].path == "b.h"


def test_definition_inside_a_question_weighs_less_than_a_lookup():
    rankings = {"bm25": [hit("bm25", "a.cs", 1, 9, 1), hit("bm25", "JsonConvert.cs", 1, 9, 2, "JsonConvert")]}
    question = fuse(rankings, "how does JsonConvert serialize", Params(path=0, file_evidence=0))
    lookup = fuse(rankings, "JsonConvert", Params(path=0, file_evidence=0))
    q_boost = next(s.boost for s in question[0].signals if s.name == "definition")
    l_boost = next(s.boost for s in lookup[0].signals if s.name == "definition")
    assert question[0].path == lookup[0].path == "JsonConvert.cs"
    assert q_boost == pytest.approx(l_boost * DEFAULT_PARAMS.embedded_share)


def test_path_a_query_word_that_is_the_file_stem_or_folder_lifts_it():
    rankings = {"bm25": [hit("bm25", "app.py", 1, 40, 1), hit("bm25", "dependencies/utils.py", 1, 40, 2)]}
    out = fuse(rankings, "how does dependency injection work", Params(definition=0, file_evidence=0))
    assert out[0].path == "dependencies/utils.py"
    [signal] = [s for s in out[0].signals if s.name == "path"]
    assert "dependency" in signal.reason
    # a lookup is not a path question
    assert not any(s.name == "path" for h in fuse(rankings, "dependencies") for s in h.signals)


def test_file_evidence_a_file_ranked_several_times_outranks_a_single_hit():
    rankings = {
        "bm25": [
            hit("bm25", "single.py", 1, 10, 1),
            hit("bm25", "many.py", 1, 10, 2),
            hit("bm25", "many.py", 20, 30, 3),
            hit("bm25", "many.py", 40, 50, 4),
        ],
    }
    assert fuse(rankings, "x y z", NONE)[0].path == "single.py"
    out = fuse(rankings, "x y z", Params(definition=0, path=0, diversity=1.0, top_file_diversity=1.0))
    assert out[0].path == "many.py"
    assert any(s.name == "file-evidence" and "3 ranked hits" in s.reason for s in out[0].signals)


def test_name_parts_are_the_words_of_the_stem():
    assert name_parts("Sources/Vapor/Request/Request+Session.swift") == ("request", "session")
    assert name_parts("node/pools/poolRunner.ts") == ("pool", "runner")
    assert name_parts("src/fs-poll.c") == ("fs", "poll")
    assert name_parts("lib/x.ex") == ("x",)


def test_name_coverage_the_file_whose_name_the_query_names_whole_gains_most():
    rankings = {
        "bm25": [hit("bm25", "Headers/HTTPMediaType.swift", 1, 9, 1), hit("bm25", "Request/Request.swift", 1, 9, 2)]
    }
    only = replace(NONE, name_coverage=0.5)
    out = fuse(rankings, "Request type and HTTP request representation", only)
    assert out[0].path == "Request/Request.swift"
    by_path = {h.path: h for h in out}
    [whole] = [s for s in by_path["Request/Request.swift"].signals if s.name == "name-coverage"]
    [part] = [s for s in by_path["Headers/HTTPMediaType.swift"].signals if s.name == "name-coverage"]
    assert "1 of the 1" in whole.reason and "2 of the 3" in part.reason
    assert whole.boost == pytest.approx(part.boost * 1.5)
    # a lookup is not a question about names
    assert not any(s.name == "name-coverage" for h in fuse(rankings, "Request", only) for s in h.signals)


def test_coverage_the_file_whose_names_hold_most_keywords_gains_most():
    def crumb_hit(arm, path, rank, context, symbol=""):
        return Hit(arm, make_docid(path, 1, 9), path, 1, 9, rank, 1.0, context, None, None, symbol)

    rankings = {
        "bm25": [
            crumb_hit("bm25", "src/errors.py", 1, "src/errors.py > ExceptionPage > render"),
            crumb_hit(
                "bm25", "src/deps/solver.py", 2, "src/deps/solver.py > Solver > propagate_exception", "solve_dependency"
            ),
        ]
    }
    only = replace(NONE, coverage=0.5)
    out = fuse(rankings, "how exceptions propagate in dependency solving", only)
    assert out[0].path == "src/deps/solver.py"
    [signal] = [s for s in out[0].signals if s.name == "coverage"]
    # exceptions ~ exception, propagate, dependency, solving ~ solver/solve: 4 of 4 keywords
    assert signal.reason.endswith("dependency, exceptions, propagate, solving")
    assert signal.boost == pytest.approx(max(h.fused_score for h in out) * 0.5)
    [other] = [s for s in out[1].signals if s.name == "coverage"]
    assert other.reason.endswith("exceptions") and other.boost == pytest.approx(signal.boost / 4)
    # a lookup is not a question about concepts
    assert not any(s.name == "coverage" for h in fuse(rankings, "Solver", only) for s in h.signals)


@pytest.mark.parametrize(
    "paths, query, params, lifted",
    [
        # depth: the file higher in the tree than the median candidate wins a tie
        (
            ["pkg/_internal/core/a.py", "pkg/_internal/b.py", "pkg/c.py"],
            "x",
            replace(NONE, depth=0.8),
            "pkg/c.py",
        ),
        # name-length: the file with fewer words in its name wins a tie
        (
            ["app/session_store_driver.rb", "app/session_store.rb", "app/session.rb"],
            "x",
            replace(NONE, name_length=0.8),
            "app/session.rb",
        ),
    ],
)
def test_depth_and_name_length_lift_the_general_file_one_step_at_most(paths, query, params, lifted):
    rankings = {
        "bm25": [hit("bm25", p, 1, 9, i + 1) for i, p in enumerate(paths)],
        "dense": [hit("dense", p, 1, 9, len(paths) - i) for i, p in enumerate(paths)],
    }  # a tie
    out = fuse(rankings, query, params)
    assert out[0].path == lifted
    factors = {h.path: [s for s in h.signals if s.name in ("depth", "name-length")] for h in out}
    [up] = factors[lifted]
    assert up.factor == pytest.approx(1 / 0.8) and up.boost == 0
    [down] = factors[paths[0]]
    assert down.factor == pytest.approx(0.8)  # two steps from the median: capped at one
    assert not factors[paths[1]]  # the median itself is not moved
    # off (1.0): no factor, the plain order
    off = fuse(rankings, query, NONE)
    assert not any(s.name in ("depth", "name-length") for h in off for s in h.signals)


def test_diversity_scales_a_files_further_hits_down():
    rankings = {"bm25": [hit("bm25", "a.py", 1, 10, 1), hit("bm25", "a.py", 20, 30, 2), hit("bm25", "b.py", 1, 10, 3)]}
    plain = [h.path for h in fuse(rankings, "x", NONE)]
    assert plain == ["a.py", "a.py", "b.py"]
    out = fuse(rankings, "x", Params(definition=0, path=0, file_evidence=0, diversity=0.3, top_file_diversity=0.3))
    assert [h.path for h in out] == ["a.py", "b.py", "a.py"]
    [signal] = out[2].signals
    assert signal.name == "diversity" and signal.factor == pytest.approx(0.3)


def test_the_first_file_may_show_a_second_function():
    """The first file's further hits are scaled by ``top_file_diversity``, every other file's
    by ``diversity``: a.py's second hit stays above c.py, b.py's drops below it."""
    rankings = {
        "bm25": [
            hit("bm25", "a.py", 1, 10, 1),
            hit("bm25", "a.py", 20, 30, 2),
            hit("bm25", "b.py", 1, 10, 3),
            hit("bm25", "b.py", 20, 30, 4),
            hit("bm25", "c.py", 1, 10, 10),
        ]
    }
    params = Params(definition=0, path=0, file_evidence=0, diversity=0.3, top_file_diversity=0.5)
    out = fuse(rankings, "x", params)
    assert [h.path for h in out] == ["a.py", "b.py", "a.py", "c.py", "b.py"]
    assert [s.factor for s in out[2].signals if s.name == "diversity"] == [pytest.approx(0.5)]
    assert [s.factor for s in out[4].signals if s.name == "diversity"] == [pytest.approx(0.3)]
    same = fuse(rankings, "x", Params(definition=0, path=0, file_evidence=0, diversity=0.3, top_file_diversity=0.3))
    assert [h.path for h in same] == ["a.py", "b.py", "c.py", "a.py", "b.py"]


def test_priors_multiply_after_the_boosts_and_the_score_adds_up():
    rankings = {
        "bm25": [
            hit("bm25", "tests/test_router.py", 1, 10, 1, "Router"),
            hit("bm25", "src/router.py", 1, 10, 2, "Router"),
        ]
    }
    out = fuse(rankings, "Router")
    assert out[0].path == "src/router.py"
    for h in out:
        boosted = h.fused_score + sum(s.boost for s in h.signals)
        factor = math.prod(p.factor for p in h.priors) * math.prod(s.factor for s in h.signals)
        assert h.score == pytest.approx(boosted * factor)
    assert [p.name for p in out[1].priors] == ["tests"]


def test_a_cut_keeps_the_best_of_the_full_order():
    rankings = {
        "bm25": [hit("bm25", f"f{i}.py", 1, 10, i + 1) for i in range(20)],
        "dense": [hit("dense", f"f{19 - i}.py", 1, 10, i + 1) for i in range(20)],
    }
    whole = fuse(rankings, "where is f3")
    cut = fuse(rankings, "where is f3", limit=5)
    assert [h.docid for h in cut] == [h.docid for h in whole[:5]]
    assert [h.rank for h in cut] == [1, 2, 3, 4, 5]


# ----------------------------------------------------------------------------- through the engine


@pytest.fixture
def router_repo(tmp_path):
    files = {
        "src/routing/Router.java": """
            package app.routing;

            /** Dispatches a request to the route that matches it. */
            public class Router {
                public Response dispatch(Request request) { return routes.match(request).run(request); }
            }
        """,
        "src/http/Kernel.java": """
            package app.http;

            public class Kernel {
                private Router router;
                public Response handle(Request request) { return router.dispatch(request); }
                public Router router() { return router; }
            }
        """,
        "src/routing/RouteFileRegistrar.java": """
            package app.routing;

            public class RouteFileRegistrar {
                public void register(Router router, Routes routes) { router.group(routes); }
            }
        """,
        "docs/routing.md": "# Routing\n\nThe Router dispatches a request to a route. Use the Router.\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def test_a_bare_identifier_finds_the_file_that_defines_it(router_repo):
    engine = Engine(router_repo)
    try:
        engine.ensure_index(deep=False)
        result = engine.search("Router", arms=["bm25", "fts5", "symbols"])
        assert result.hits[0].path == "src/routing/Router.java"
        assert any(s.name == "definition" for s in result.hits[0].signals)
        plain = engine.search("Router", arms=["bm25", "fts5", "symbols"], priors=False)
        assert all(not h.signals and h.fused_score is None for h in plain.hits)
    finally:
        engine.close()


def test_the_symbols_arm_puts_the_exact_definition_of_a_bare_identifier_first(tmp_path):
    """A definition whose name drowns in its long docs still leads the symbols arm for the
    bare identifier; a capitalised name must match exactly, a lowercase one in any case."""
    docs = "\n".join(f"    /// Visitor notes, visitor visits visitors, line {i}." for i in range(30))
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "mod.rs").write_text(f"pub trait Visitor {{\n{docs}\n    fn visit(&self);\n}}\n")
    for i in range(12):  # many short chunks that mention the word more densely
        (tmp_path / f"use{i}.rs").write_text(f"fn visitor_{i}(v: Visitor) {{ v.visit(); /* visitor */ }}\n")
    (tmp_path / "other.rs").write_text("fn visitor() {}\n")
    engine = Engine(tmp_path)
    try:
        engine.ensure_index(deep=False)
        top = engine.run_arm("symbols", "Visitor", depth=10).hits[0]
        assert top.path == "de/mod.rs" and top.rank == 1
        assert engine.run_arm("symbols", "visitor", depth=10).hits[0].path in {"de/mod.rs", "other.rs"}
        assert engine.search("Visitor").hits[0].path == "de/mod.rs"
    finally:
        engine.close()


def test_a_class_named_in_words_is_found_by_its_definition(tmp_path, monkeypatch):
    """ "JSON object with named fields" (gson): no arm ranked JsonObject's file in its first 30
    while tests named after every word of the question filled them; the symbols arm reads the
    question's adjacent words joined too (``jsonobject``), so the class comes first."""
    from ranklens.core.arms.symbols import SymbolsArm

    (tmp_path / "JsonObject.java").write_text(
        "/** A tree node holding members. */\npublic final class JsonObject extends JsonElement {\n"
        "  private final Map<String, JsonElement> members = new LinkedHashMap<>();\n"
        "  public void add(String property, JsonElement value) { members.put(property, value); }\n}\n"
    )
    for i in range(12):
        (tmp_path / f"Uses{i}Test.java").write_text(
            f"class JsonObjectWithNamedFields{i}Test {{\n  /** A JSON object with named fields. */\n"
            f'  void testJsonObjectWithNamedFields{i}() {{ new JsonObject().add("named", null); }}\n}}\n'
        )
    engine = Engine(tmp_path)
    try:
        engine.ensure_index(deep=False)
        question = "JSON object with named fields"
        assert engine.run_arm("symbols", question, depth=5).hits[0].path == "JsonObject.java"
        monkeypatch.setattr(SymbolsArm, "compounds", False)  # the words alone: the tests first
        assert engine.run_arm("symbols", question, depth=5).hits[0].path != "JsonObject.java"
    finally:
        engine.close()


def test_a_hits_words_are_those_of_its_names_and_of_each_breadcrumb():
    """``coverage`` asks one set of words per hit: its names' and each of its breadcrumbs'
    (without their paths), the same words as asking each apart."""
    import random

    from ranklens.core.text.names import chunk_words, hit_words

    rng = random.Random(3)
    names = ["parse_args", "ArgumentParser", "add_argument", "Thread.lock", "x", "HTTPHeaders", "read csv"]
    for _ in range(300):
        symbols = tuple(rng.sample(names, rng.randint(0, 2)))
        crumbs = tuple(
            " > ".join([f"pkg/mod{rng.randint(0, 3)}.py", *rng.sample(names, rng.randint(0, 2))])
            for _ in range(rng.randint(0, 3))
        )
        want = set(chunk_words(symbols, ""))
        for crumb in crumbs:
            want |= chunk_words((), crumb)
        assert hit_words(symbols, crumbs) == want
