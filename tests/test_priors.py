"""Code-aware priors: each rule, the query-word lift, the trace and the off switch."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

from ranklens.core.base.types import ConsolidatedHit, Hit, make_docid
from ranklens.core.evaluation import EvalRun, LabeledQuery, QueryRun, Setting, Span
from ranklens.core.evaluation.tuning import _Scorer
from ranklens.core.query.pipeline import fuse_rankings
from ranklens.core.query.priors import RULES, apply_priors, describe, matching_rules
from ranklens.core.text.languages import language_for


def names(path: str) -> list[str]:
    return [r.name for r in matching_rules(path)]


def hit(path: str, score: float, start: int = 1, end: int = 10) -> ConsolidatedHit:
    return ConsolidatedHit(
        path=path,
        start_line=start,
        end_line=end,
        docid=make_docid(path, start, end),
        context=path,
        score=score,
        rank=0,
        provenance=["bm25"],
        agreement=1,
        confidence="low",
    )


# ----------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    "path",
    [
        # python
        "tests/test_fusion.py",
        "pkg/test_utils.py",
        "pkg/fusion_test.py",
        "conftest.py",
        "app/tests.py",
        "src/pkg/tests/helpers.py",
        # go
        "ratelimit/bucket_test.go",
        "pkg/example_test.go",
        "pkg/testdata/input.go",
        # javascript / typescript
        "src/bus.test.js",
        "src/bus.spec.ts",
        "src/Button.test.tsx",
        "src/__tests__/bus.js",
        "web/router-spec.mjs",
        "src/__mocks__/fs.ts",
        # rust
        "tests/integration.rs",
        "crate/tests/parse.rs",
        "src/tests.rs",
        # java
        "src/test/java/com/acme/AccountTest.java",
        "src/main/java/com/acme/AccountTests.java",
        "src/it/AccountIT.java",
        "lib/TestAccount.java",
        # ruby
        "spec/models/user_spec.rb",
        "lib/cart_spec.rb",
        "test/cart_test.rb",
        "lib/test_cart.rb",
        # c / c++
        "base/strings_test.cc",
        "net/socket_unittest.cc",
        "util/list_tests.cpp",
        "src/test_list.c",
        "test/check_list.c",
        "unittests/vector.cpp",
        # JVM / .NET neighbours
        "app/src/test/kotlin/UserTest.kt",
        "Acme.Tests/ParserTests.cs",
        # scala, swift, php, haskell, elixir, lua, zig, shell
        "core/FunctorSuite.scala",
        "Sources/RouterTests.swift",
        "src/CollectionTest.php",
        "src/ParserSpec.hs",
        "lib/router_test.exs",
        "lua/picker_spec.lua",
        "src/parser_test.zig",
        "fixtures/run.bats",
        "lib/helpers_test.sh",
    ],
)
def test_test_code_of_every_language_is_demoted(path):
    assert names(path) == ["tests"], (path, language_for(path))


def test_a_shell_library_named_test_something_is_code():
    # bats-core's own library, the code its questions are about
    assert names("lib/bats-core/test_functions.bash") == []


@pytest.mark.parametrize(
    "path",
    [
        "core/fusion.py",
        "src/contest.ts",
        "src/main/java/com/acme/Latest.java",
        "src/main/java/com/acme/Contest.java",
        "lib/attest.rb",
        "pytest_plugin.py",
        "testing/helpers.py",
        "src/latest.rs",
        "src/protest.c",
        "core/evaluation.py",
        "lib/contest.ex",
        "src/Latest.hs",
        "lua/attest.lua",
        "src/latest.zig",
        "bin/protest.sh",
    ],
)
def test_code_that_only_looks_like_a_test_is_not(path):
    assert names(path) == []


@pytest.mark.parametrize(
    "path", ["examples/basic.rs", "src/examples/x.go", "demo/app.js", "samples/q.py", "_examples/a.go"]
)
def test_examples_are_demoted(path):
    assert names(path) == ["examples"]


def test_a_java_package_named_example_is_not_an_examples_folder():
    assert names("java/src/main/java/com/example/bank/Account.java") == []
    assert names("src/main/kotlin/org/sample/App.kt") == []


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        "README",
        "CHANGELOG.md",
        "HISTORY.rst",
        "LICENSE",
        "LICENSE.txt",
        "pkg/README.md",
        "CONTRIBUTING.md",
        "NEWS.txt",
        "AUTHORS",
    ],
)
def test_readme_changelog_and_license_files_are_demoted(path):
    assert names(path) == ["project-docs"]


def test_the_go_doc_package_and_doc_pages_are_not_demoted():
    # A naive "doc" rule would demote Go's doc package; documentation pages answer
    # operational questions (a `docs` prior was measured on the public benchmark and tuned to
    # x1.0: it did not help), so only README/CHANGELOG-style files are demoted.
    assert names("src/go/doc/comment.go") == []
    assert names("doc/doc.go") == []
    assert names("docs/conf.py") == []
    assert names("docs/DEPLOY.md") == []
    assert names("guide/install.rst") == []
    assert names("src/history.py") == [] and names("pkg/license.go") == []
    # a README is a project doc, requirements.txt is non-code: one rule each, not two
    assert names("README.md") == ["project-docs"] and names("requirements.txt") == ["non-code"]


@pytest.mark.parametrize(
    "path, rule",
    [
        ("vendor/github.com/x/y.go", "vendored"),
        ("third_party/zlib/inflate.c", "vendored"),
        ("include/single_include/json.hpp", "vendored"),
        ("static/app.min.js", "generated"),
        ("api/v1/service.pb.go", "generated"),
        ("proto/user_pb2.py", "generated"),
        ("Forms/Main.Designer.cs", "generated"),
        ("src/types.d.ts", "generated"),
    ],
)
def test_vendored_and_generated_files_are_demoted(path, rule):
    assert names(path) == [rule]


def test_vendored_and_generated_rules_leave_ordinary_code_alone():
    assert names("src/vendors.py") == [] and names("lib/generate.ts") == [] and names("src/min.js") == []


@pytest.mark.parametrize(
    "path",
    [
        "config.yaml",
        "deploy/values.yml",
        "package.json",
        "pyproject.toml",
        "setup.cfg",
        "pom.xml",
        "templates/index.html",
        "app/views/show.html.erb",
        "Cargo.lock",
        "go.sum",
        "go.mod",
        "data/points.csv",
        ".gitignore",
        "requirements.txt",
        "requirements-dev.txt",
        "icons/logo.svg",
        "templates/mail.j2",
    ],
)
def test_non_code_files_are_demoted(path):
    assert names(path) == ["non-code"]


@pytest.mark.parametrize(
    "path", ["Makefile", "Dockerfile", "CMakeLists.txt", "scripts/build.sh", "web/site.css", "main.tf"]
)
def test_build_files_and_scripts_count_as_code(path):
    assert names(path) == []


def test_rules_compose_and_describe_themselves():
    assert names("tests/fixtures/README.md") == ["tests", "project-docs"]
    assert names("tests/fixtures/config.yaml") == ["tests", "non-code"]
    table = describe()
    assert (
        [r["name"] for r in table]
        == [r.name for r in RULES]
        == ["tests", "examples", "project-docs", "non-code", "vendored", "generated"]
    )
    for row in table:
        assert 0 < row["factor"] < 1 and row["reason"] and row["lifted_by"]


# ----------------------------------------------------------------------------- applying them


def test_demotions_reorder_multiply_and_record_the_trace():
    hits = [hit("tests/test_a.py", 0.05), hit("README.md", 0.04), hit("src/a.py", 0.03), hit("config.yaml", 0.02)]
    out = apply_priors(hits, "where is the parser")
    assert [h.path for h in out] == ["src/a.py", "tests/test_a.py", "README.md", "config.yaml"]
    assert [h.rank for h in out] == [1, 2, 3, 4]
    top, test = out[0], out[1]
    assert top.priors == [] and top.score == top.fused_score == 0.03
    assert test.fused_score == 0.05 and test.score == pytest.approx(0.05 * test.prior_factor)
    [p] = test.priors
    assert p.name == "tests" and p.factor < 1 and p.lifted_by is None and "test" in p.reason
    # the input is left alone
    assert hits[0].score == 0.05 and hits[0].priors == [] and hits[0].fused_score is None


def test_ties_break_by_path_start_end_docid():
    hits = [hit("b.py", 0.02), hit("a.py", 0.02, 5, 9), hit("a.py", 0.02, 1, 3), hit("tests/x.py", 0.04)]
    out = apply_priors(hits, "x")
    assert [(h.path, h.start_line) for h in out][:3] == [("a.py", 1), ("a.py", 5), ("b.py", 1)]


@pytest.mark.parametrize(
    "query, path, word",
    [
        ("the tests for fusion", "tests/test_fusion.py", "tests"),
        ("test that ties are broken", "tests/test_fusion.py", "test"),
        ("test_weights_of_wrong_length_are_refused", "tests/test_fusion.py", "test"),
        ("rspec spec for the cart", "spec/cart_spec.rb", "spec"),
        ("shared pytest fixtures", "tests/conftest.py", "fixtures"),
        ("an example of a client", "examples/client.py", "example"),
        ("demo app", "demo/app.js", "demo"),
        ("what does the readme say about install", "README.md", "readme"),
        ("docs on the fusion", "README.md", "docs"),
        ("which license", "LICENSE", "license"),
        ("the yaml settings", "config.yaml", "yaml"),
        ("package json scripts", "package.json", "json"),
        ("email template", "templates/mail.html", "template"),
    ],
)
def test_a_query_word_lifts_the_matching_demotion(query, path, word):
    hits = [hit(path, 0.05), hit("src/core.py", 0.04)]
    out = apply_priors(hits, query)
    assert out[0].path == path and out[0].score == out[0].fused_score == 0.05
    [p] = out[0].priors
    assert p.factor == 1.0 and p.lifted_by == word
    # without the word, the same hit is demoted
    assert apply_priors(hits, "where is it")[0].path == "src/core.py"


def test_a_lift_is_specific_to_its_rule():
    out = apply_priors([hit("README.md", 0.05), hit("src/a.py", 0.04)], "test the parser")
    assert out[0].path == "src/a.py" and out[1].priors[0].lifted_by is None


def test_the_off_switch_keeps_the_fused_order_and_records_nothing():
    hits = [hit("tests/test_a.py", 0.05), hit("src/a.py", 0.03)]
    out = apply_priors(hits, "parser", enabled=False)
    assert [h.path for h in out] == ["tests/test_a.py", "src/a.py"]
    assert all(h.priors == [] and h.score == h.fused_score for h in out)
    # re-applying to already re-scored hits starts again from the fused score
    twice = apply_priors(apply_priors(hits, "parser"), "parser")
    assert twice[1].score == pytest.approx(0.05 * RULES[0].factor) and twice[1].fused_score == 0.05
    assert [h.path for h in apply_priors(apply_priors(hits, "parser"), "parser", enabled=False)] == [
        "tests/test_a.py",
        "src/a.py",
    ]


def test_to_dict_carries_the_trace():
    [d] = [h.to_dict() for h in apply_priors([hit("tests/test_a.py", 0.05)], "x")]
    assert d["fused_score"] == 0.05 and d["score"] == pytest.approx(0.05 * RULES[0].factor)
    assert d["priors"] == [{"name": "tests", "reason": RULES[0].reason, "factor": RULES[0].factor, "lifted_by": None}]
    plain = hit("a.py", 0.01).to_dict()
    assert plain["fused_score"] == plain["score"] and plain["priors"] == []


# ----------------------------------------------------------------------------- engine and tuning


def _h(arm, path, start, end, rank):
    return Hit(arm, make_docid(path, start, end), path, start, end, rank, 1.0, path)


def test_engine_fuse_applies_priors_by_default_with_the_arms_query(tmp_path):
    from ranklens.core.engine import ArmResult, Engine

    engine = Engine(tmp_path)
    try:
        results = [
            ArmResult(
                "bm25", hits=[_h("bm25", "tests/test_a.py", 1, 5, 1), _h("bm25", "a.py", 1, 5, 2)], query="parse it"
            ),
            ArmResult(
                "dense", hits=[_h("dense", "tests/test_a.py", 1, 5, 1), _h("dense", "a.py", 1, 5, 2)], query="parse it"
            ),
        ]
        on = engine.fuse(results)
        assert [h.path for h in on] == ["a.py", "tests/test_a.py"] and on[1].priors[0].name == "tests"
        off = engine.fuse(results, priors=False)
        assert [h.path for h in off] == ["tests/test_a.py", "a.py"] and all(h.priors == [] for h in off)
        for r in results:
            r.query = "test parse"
        lifted = engine.fuse(results)
        assert [h.path for h in lifted] == ["tests/test_a.py", "a.py"] and lifted[0].priors[0].lifted_by == "test"
        # a mapping of rankings has no query: nothing is lifted unless one is given
        mapping = {r.arm: r.hits for r in results}
        assert engine.fuse(mapping)[0].path == "a.py"
        assert engine.fuse(mapping, query="test parse")[0].path == "tests/test_a.py"
    finally:
        engine.close()


def test_tuning_refuses_with_the_priors_lifted_or_not_by_the_query():
    from ranklens.core.query.settings import FusionSettings

    rankings = {
        "bm25": [_h("bm25", "tests/test_a.py", 1, 5, 1), _h("bm25", "a.py", 1, 5, 2), _h("bm25", "README.md", 1, 9, 3)],
        "dense": [
            _h("dense", "README.md", 1, 9, 1),
            _h("dense", "tests/test_a.py", 3, 4, 2),
            _h("dense", "a.py", 4, 8, 3),
        ],
    }
    for text in ("where is parse", "test parse"):
        q = LabeledQuery("q", text, (Span("a.py", 1, 5),))
        run = EvalRun(
            [QueryRun(q, rankings, {}, [], 0.0)], FusionSettings(("bm25", "dense"), k=60.0), ["bm25", "dense"], {}
        )
        top = _Scorer(run).hits(Setting((("bm25", 1.0), ("dense", 1.0)), 60.0), 0)[0]
        assert top.path == ("tests/test_a.py" if text.startswith("test") else "a.py")


# ----------------------------------------------------------------------------- CLI

REPO = {
    "src/parser.py": '''
        def parse_header(line):
            """Split a header line into its name and value."""
            name, _, value = line.partition(":")
            return name.strip(), value.strip()
    ''',
    "tests/test_parser.py": """
        from src.parser import parse_header

        def test_parse_header_splits_name_and_value():
            assert parse_header("Host: example") == ("Host", "example")
            assert parse_header("parse header name value") is not None
    """,
    "README.md": """
        # parser

        parse_header splits a header line into its name and value.
    """,
}


@pytest.fixture
def small_repo(tmp_path):
    for rel, text in REPO.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ranklens", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_cli_query_json_shows_the_priors_and_no_priors_turns_them_off(small_repo):
    on = cli("query", "parse header name value", "--root", str(small_repo), "--json")
    assert on.returncode == 0, on.stderr
    data = json.loads(on.stdout)
    assert data["priors"] is True
    by_path = {r["path"]: r for r in data["results"]}
    assert data["results"][0]["path"] == "src/parser.py"
    assert [p["name"] for p in by_path["tests/test_parser.py"]["priors"]] == ["tests"]
    assert [p["name"] for p in by_path["README.md"]["priors"]] == ["project-docs"]
    # The final score is the fused score plus the ranking stage's boosts, times the priors'
    # and the signals' factors.
    for r in data["results"]:
        factor = math.prod(p["factor"] for p in r["priors"]) * math.prod(s["factor"] for s in r["signals"])
        boosted = r["fused_score"] + sum(s["boost"] for s in r["signals"])
        assert r["score"] == pytest.approx(boosted * factor)
    assert by_path["tests/test_parser.py"]["priors"][0]["factor"] == RULES[0].factor

    off = cli("query", "parse header name value", "--root", str(small_repo), "--json", "--no-priors")
    assert off.returncode == 0, off.stderr
    plain = json.loads(off.stdout)
    assert plain["priors"] is False
    assert all(r["priors"] == [] and r["score"] == r["fused_score"] for r in plain["results"])

    single = json.loads(cli("query", "parse header", "--root", str(small_repo), "--json", "--retriever", "bm25").stdout)
    assert any(r["priors"] for r in single["results"])
    single_off = cli("query", "parse header", "--root", str(small_repo), "--json", "--retriever", "bm25", "--no-priors")
    assert all(r["priors"] == [] for r in json.loads(single_off.stdout)["results"])


def test_cli_query_text_names_the_demotion(small_repo):
    out = cli("query", "parse header name value", "--root", str(small_repo))
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0].split(":")[0]: line for line in out.stdout.splitlines()}
    assert lines["tests/test_parser.py"].endswith(f"tests x{RULES[0].factor:g})")
    assert "tests x" not in lines["src/parser.py"].split("]", 1)[1]
    lifted = cli("query", "test parse header", "--root", str(small_repo))
    assert all("(tests" not in line for line in lifted.stdout.splitlines())


def test_cli_eval_and_tune_take_no_priors(small_repo, tmp_path):
    labeled = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "a",
            "query": "parse header name value",
            "gold": [{"path": "src/parser.py", "start_line": 1, "end_line": 4}],
        },
        {
            "id": "b",
            "query": "split a header line",
            "gold": [{"path": "src/parser.py", "start_line": 1, "end_line": 4}],
        },
    ]
    labeled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    on = json.loads(cli("eval", str(labeled), "--root", str(small_repo), "--json").stdout)
    off = json.loads(cli("eval", str(labeled), "--root", str(small_repo), "--json", "--no-priors").stdout)
    assert on["configuration"]["priors"] is True and off["configuration"]["priors"] is False
    for arm in ("bm25", "fts5", "fused"):
        assert on["groups"]["all"]["rows"][arm]["ndcg@10"] >= off["groups"]["all"]["rows"][arm]["ndcg@10"]
    assert "priors on" in cli("eval", str(labeled), "--root", str(small_repo)).stdout
    tuned = cli("tune", str(labeled), "--root", str(small_repo), "--folds", "2", "--json", "--no-priors")
    assert tuned.returncode == 0, tuned.stderr
    assert json.loads(tuned.stdout)["priors"] is False


def test_help_texts_document_the_priors():
    for command in ("query", "eval", "tune"):
        out = cli(command, "--help")
        assert out.returncode == 0 and "--no-priors" in out.stdout
    assert "fused_score" in cli("query", "--help").stdout


def test_applying_the_priors_leaves_the_input_hits_alone():
    ranking = [
        Hit("bm25", make_docid(p, 1, 9), p, 1, 9, r, 1.0, p)
        for r, p in enumerate(["tests/test_a.py", "app/a.py", "README.md", "app/b.py"], start=1)
    ]
    given = fuse_rankings({"bm25": ranking})
    before = [h.to_dict() for h in given]
    out = apply_priors(given, "where is a")
    assert [h.to_dict() for h in given] == before
    assert not {id(h) for h in out} & {id(h) for h in given}
    assert [h.path for h in out][-2:] == ["tests/test_a.py", "README.md"]
