"""What `evals/chunk_evidence.py` counts as a unit's comments and as a call (its measurements
in docs/appendix/eval-span-set.md rest on these rules)."""

from __future__ import annotations

from evals.chunk_evidence import calls, comments, leading, mentions, short


def test_comments_hold_line_block_doc_and_trailing_comments_without_their_marks():
    lines = [
        "/**",
        " * Redirects the request with status 307.",
        " */",
        "func redirect(c *Context) {",
        "    code := 307 // keep the method",
        "    # not a Go comment but a shell one",
        "}",
    ]
    assert comments(lines).split("\n") == [
        "Redirects the request with status 307.",
        "keep the method",
        "not a Go comment but a shell one",
    ]


def test_python_docstrings_are_comments_and_code_is_not():
    lines = ["def f(x):", '    """Return x twice."""', "    return x * 2  # doubled"]
    assert comments(lines) == "Return x twice."


def test_preprocessor_lines_and_attributes_are_not_comments():
    lines = ["#include <stdio.h>", "#define N 3", "#[derive(Debug)]", "# a real comment"]
    assert comments(lines) == "a real comment"


def test_leading_takes_the_comment_above_the_definition_only():
    lines = ["// Parses the header.", "// Stops at the first hop.", "func parse() {", "    // inside", "}"]
    assert leading(lines) == "Parses the header.\nStops at the first hop."
    assert leading(["func parse() {", "    x := 1", "    // late", "}"]) == ""


def test_a_call_is_the_name_then_an_opening_mark():
    assert calls("redirectRequest", "\tredirectRequest(c)")
    assert calls("parse", "let v = parse::<u8>(s)")
    assert calls("vec", "vec![1, 2]")
    assert not calls("redirectRequest", "// see redirectRequest")
    assert not calls("redirect", "redirectRequest(c)")  # part of a longer name
    assert not calls("go", "go(x)")  # names under 3 characters are too common to count


def test_a_mention_is_the_name_as_a_whole_word_anywhere():
    assert mentions("redirectRequest", "// see redirectRequest")
    assert mentions("Copy", "c.Copy()")
    assert not mentions("Copy", "CopyFrom(x)")
    assert not mentions("go", "go run")  # names under 3 characters are too common to count


def test_short_is_the_last_part_of_a_qualified_name():
    assert short("Context.Copy") == "Copy"
    assert short("Builder::runPaginationCountQuery") == "runPaginationCountQuery"
    assert short("findWildcard") == "findWildcard"
