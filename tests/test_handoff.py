"""The handoff format: the published JSON Schema, span hashes, and ``query --batch``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from cli_helpers import run
from jsonschema import Draft202012Validator

from ranklens.core.base.handoff_schema import SCHEMA_FILE, HandoffError, handoff_schema, validate_handoff
from ranklens.core.handoff import span_lines, span_text, text_sha256


def test_the_schema_is_a_valid_2020_12_schema_shipped_in_the_package():
    Draft202012Validator.check_schema(handoff_schema())
    assert SCHEMA_FILE.parent.name == "schemas" and SCHEMA_FILE.parent.parent.name == "core"


def test_query_json_and_output_are_valid_handoffs(sample_repo, tmp_path):
    target = tmp_path / "handoff.json"
    out = run("query", "hash a password", "--root", str(sample_repo), "--json", "--output", str(target))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert validate_handoff(data) == data
    Draft202012Validator(handoff_schema()).validate(json.loads(target.read_text()))
    for hit in data["results"]:
        text = span_text(sample_repo, hit["path"], hit["start_line"], hit["end_line"])
        assert hit["sha256"] == text_sha256(text)


def test_an_export_in_the_repository_is_never_indexed(sample_repo):
    # An export left in the work tree, by its usual name and copied under another one.
    export = sample_repo / "ranklens-handoff.json"
    out = run("query", "rate limiter", "--root", str(sample_repo), "--output", str(export))
    assert out.returncode == 0, out.stderr
    renamed = sample_repo / "notes" / "last-search.txt"
    renamed.parent.mkdir()
    renamed.write_text(export.read_text(encoding="utf-8"), encoding="utf-8")
    # A JSON file that only looks like one (same keys, not the format) is still indexed.
    lookalike = sample_repo / "fixtures.json"
    lookalike.write_text(json.dumps({"query": "rate limiter", "retrievers": "none", "results": "limiter"}))

    index = run("index", str(sample_repo), "--json")
    assert index.returncode == 0, index.stderr
    skipped = {s["path"]: s["reason"] for s in json.loads(index.stdout)["skipped"]}
    assert skipped["ranklens-handoff.json"] == skipped["notes/last-search.txt"] == "ranklens handoff"
    assert "fixtures.json" not in skipped
    again = run("query", "rate limiter", "--root", str(sample_repo), "--json", "--top-k", "50")
    paths = {r["path"] for r in json.loads(again.stdout)["results"]}
    assert "ranklens-handoff.json" not in paths and "notes/last-search.txt" not in paths
    assert "fixtures.json" in paths
    why = run("why", str(renamed), "--root", str(sample_repo))
    assert why.stdout.strip() == "notes/last-search.txt: listed, but not indexed: ranklens handoff"


def test_a_bad_document_names_the_first_problem():
    with pytest.raises(HandoffError, match=r"results/0: 'start_line' is a required property"):
        validate_handoff(
            {
                "schema_version": 1,
                "query": "q",
                "mode": "all",
                "retrievers": [],
                "skipped": [],
                "weights": {},
                "k": 5,
                "results": [{"path": "a.py"}],
            }
        )
    with pytest.raises(HandoffError, match="not of type 'object'"):
        validate_handoff([])


def test_span_hash_is_of_the_lines_as_the_index_numbers_them(tmp_path):
    (tmp_path / "crlf.py").write_bytes(b"\xef\xbb\xbfa = 1\r\nb = 2\rc = 3\n")
    assert span_text(tmp_path, "crlf.py", 1, 2) == "a = 1\nb = 2"
    assert span_lines("a = 1\nb = 2\nc = 3\n", 2, 3) == "b = 2\nc = 3"
    assert text_sha256("a = 1\nb = 2") == hashlib.sha256(b"a = 1\nb = 2").hexdigest()


# -- query --batch ------------------------------------------------------------------------


def batch(lines, *args):
    stdin = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    return subprocess.run(
        [sys.executable, "-m", "ranklens", "query", "--batch", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def without_time(envelope: dict) -> dict:
    return {k: v for k, v in envelope.items() if k not in ("query_ms", "id")}


def test_batch_answers_as_separate_queries_do(sample_repo):
    queries = [
        {"id": "a", "query": "rate limiter"},
        {"id": 2, "query": "LRUCache", "retriever": "fts5", "top_k": 3},
        {"id": None, "query": "parse", "path": "engine/*", "weights": {"dense": 1.5}, "no_priors": True},
    ]
    out = batch(queries, "--root", str(sample_repo))
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a["id"] for a in answers] == ["a", 2, None]
    singles = [
        run("query", "rate limiter", "--root", str(sample_repo), "--json"),
        run("query", "LRUCache", "--root", str(sample_repo), "--json", "--retriever", "fts5", "--top-k", "3"),
        run(
            "query",
            "parse",
            "--root",
            str(sample_repo),
            "--json",
            "--path",
            "engine/*",
            "--weights",
            "dense:1.5",
            "--no-priors",
        ),
    ]
    for answer, single in zip(answers, singles):
        assert single.returncode == 0, single.stderr
        assert answer["query_ms"] > 0
        validate_handoff(answer)
        assert without_time(answer) == without_time(json.loads(single.stdout))


def test_a_bad_batch_line_gets_an_error_and_the_batch_goes_on(sample_repo):
    out = batch(
        [
            "not json",
            {"id": 1, "query": "   "},
            {"id": 2, "query": "x", "topk": 3},
            {"id": 3, "query": "x", "top_k": 0},
            {"id": 4, "query": "cache", "retriever": "nope"},
            {"id": 5, "query": "rate limiter"},
            {"id": 6, "query": "cache", "lang": "klingon"},
        ],
        "--root",
        str(sample_repo),
    )
    # Malformed lines: exit 2, and still an error envelope each, the good line answered.
    assert out.returncode == 2, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 1, 2, 3, 4, 5, 6]
    assert answers[0]["error"].startswith("not JSON")
    assert answers[1]["error"] == "the query is empty"
    assert "unknown field 'topk'" in answers[2]["error"]
    assert "--top-k must be from 1" in answers[3]["error"]
    assert "unknown retriever 'nope'" in answers[4]["error"]
    assert answers[5]["results"][0]["path"] == "server/main.go"
    assert answers[6]["error"].startswith("unknown language 'klingon' (known: ")
    assert "6 of 7 batch lines could not be answered" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_batch_line_no_retriever_could_answer_exits_1(sample_repo):
    out = batch(
        [{"id": "a", "query": "cache"}, {"id": "b", "query": "cache", "retriever": "dense"}],
        "--root",
        str(sample_repo),
        "--model",
        str(sample_repo / "no-such-model"),
    )
    assert out.returncode == 1, out.stderr
    first, second = (json.loads(line) for line in out.stdout.splitlines())
    assert first["results"] and second["error"].startswith("no retriever could answer (dense: ")


@pytest.mark.parametrize(
    "args, message",
    [
        (["TEXT"], "give TEXT or --batch, not both"),
        (["--output", "x.json"], "--output does not apply"),
        (["--top-k", "0"], "--top-k must be from 1"),
    ],
)
def test_bad_batch_invocations_exit_2_with_one_line(sample_repo, args, message):
    out = batch([], "--root", str(sample_repo), *args)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_query_needs_text_or_batch():
    out = run("query")
    assert out.returncode == 2 and "missing TEXT (or --batch" in out.stderr
