"""Following the code (core/graph): edges read while chunking, kept per segment, resolved by
closeness, answered by ``ranklens related``, MCP ``related`` and ``--like``; on small real
repositories in Python, Go and TypeScript whose edges are known."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from cli_helpers import run

from ranklens.core.chunking import chunk_file
from ranklens.core.engine import Engine
from ranklens.core.navigate import answer_related, neighbourhood, parse_place
from ranklens.core.service import RequestError, answer_query, check_request

PYTHON = {
    "shop/retry.py": '''
        """Retrying with backoff."""


        class Retry:
            def __init__(self, total):
                self.total = total

            def get_backoff_time(self):
                # a comment naming sleep_for() is not a use
                return min(self.total * 2, MAX_BACKOFF)

            def sleep_for(self):
                """Calls helper() in prose only."""
                return self.get_backoff_time()


        MAX_BACKOFF = 120
        ''',
    "shop/client.py": """
        from .retry import Retry


        def fetch(url):
            policy = Retry(3)
            wait = policy.get_backoff_time()
            return url, wait


        def describe():
            return "fetch() is mentioned in a string only"
        """,
    "shop/other.py": '''
        def get_backoff_time():
            """Another definition of the same name, used in this file only."""
            return 1


        def poll():
            return get_backoff_time()
        ''',
    "far/away.py": """
        def get_backoff_time():
            return 2
        """,
    "tests/test_retry.py": """
        from shop.retry import Retry


        def test_backoff_doubles():
            assert Retry(2).get_backoff_time() == 4
        """,
}

GO = {
    "go.mod": "module example.com/app\n",
    "retry/retry.go": """
        package retry

        // Backoff says how long to wait.
        func Backoff(n int) int {
        \treturn n * 2
        }

        func Do(n int) int {
        \treturn Backoff(n) + 1
        }
        """,
    "main.go": """
        package main

        import "example.com/app/retry"

        func main() {
        \tprintln(retry.Do(3))
        }
        """,
    "retry/retry_test.go": """
        package retry

        import "testing"

        func TestBackoff(t *testing.T) {
        \tif Backoff(2) != 4 {
        \t\tt.Fatal("no")
        \t}
        }
        """,
}

TYPESCRIPT = {
    "src/format.ts": """
        export function formatPrice(cents: number): string {
          return `${cents / 100}`;
        }

        export class Cart {
          total(items: number[]): string {
            return formatPrice(items.reduce((a, b) => a + b, 0));
          }
        }
        """,
    "src/checkout.ts": """
        import { Cart } from "./format";

        export function checkout(items: number[]): string {
          const cart = new Cart();
          return cart.total(items);
        }
        """,
    "src/format.test.ts": """
        import { formatPrice } from "./format";

        test("formats", () => {
          expect(formatPrice(150)).toBe("1.5");
        });
        """,
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def py_engine(tmp_path):
    eng = Engine(write(tmp_path / "py", PYTHON))
    eng.ensure_index()
    yield eng
    eng.close()


@pytest.fixture
def engine_of(tmp_path):
    """An indexed engine over a repository made of ``files``, closed after the test."""
    made = []

    def make(name: str, files: dict[str, str]) -> Engine:
        eng = Engine(write(tmp_path / name, files))
        made.append(eng)
        eng.ensure_index()
        return eng

    yield make
    for eng in made:
        eng.close()


def spans(places) -> list[tuple[str, str]]:
    return [(p.path, p.name) for p in places]


def test_chunks_record_the_names_their_code_uses_not_prose_or_strings():
    chunks = chunk_file("shop/retry.py", textwrap.dedent(PYTHON["shop/retry.py"]).lstrip("\n"))
    used = " ".join(c.refs for c in chunks).split()
    assert "get_backoff_time" in used and "MAX_BACKOFF" in used
    assert "helper" not in used  # in a docstring
    assert "sleep_for" not in used  # a definition is not a use of itself; the comment is prose
    assert "=sleep_for" in used and "=Retry" in used  # what the chunk defines, nested too


def test_callers_callees_and_tests_of_a_python_method(py_engine):
    found = neighbourhood(py_engine, "shop/retry.py", "get_backoff_time")
    assert found.unit.name == "get_backoff_time" and found.unit.start_line == 8
    # Its own file first (same file), then the module that imports it; not shop/other.py's
    # poll (it calls its own get_backoff_time) nor the comment in get_backoff_time.
    assert spans(found.callers) == [("shop/retry.py", "sleep_for"), ("shop/client.py", "fetch")]
    assert [p.resolution for p in found.callers] == ["same file", "imported"]
    assert found.callers[1].line == 6 and found.callers[1].candidates == 3
    assert spans(found.tests) == [("tests/test_retry.py", "test_backoff_doubles")]
    assert found.counts == {"callers": 2, "callees": 0, "tests": 1}  # min: a builtin; MAX_BACKOFF: no definition
    sleep = neighbourhood(py_engine, "shop/retry.py", "sleep_for")
    assert [(p.path, p.name, p.resolution) for p in sleep.callees] == [
        ("shop/retry.py", "get_backoff_time", "same file")
    ]


def test_a_constructor_is_called_through_its_class(py_engine):
    found = neighbourhood(py_engine, "shop/retry.py", 6)  # inside __init__
    assert found.unit.name == "__init__"
    assert ("shop/client.py", "fetch") in spans(found.callers)
    assert spans(found.tests) == [("tests/test_retry.py", "test_backoff_doubles")]


def test_an_ambiguous_callee_resolves_to_the_closest_definition(py_engine):
    # poll() uses get_backoff_time, defined in its own file, in shop/retry.py and in far/away.py.
    found = neighbourhood(py_engine, "shop/other.py", "poll")
    assert [(p.path, p.resolution, p.candidates) for p in found.callees] == [("shop/other.py", "same file", 3)]
    # From a file that defines none, the same directory's definitions come before far/away.py's;
    # a bare call is a function's, never Retry's method (shop/retry.py, the same directory too).
    (py_engine.root / "shop" / "cron.py").write_text("def tick():\n    return get_backoff_time()\n")
    py_engine.ensure_index()
    tick = neighbourhood(py_engine, "shop/cron.py", "tick")
    assert [(p.path, p.resolution) for p in tick.callees] == [("shop/other.py", "same directory")]


def test_a_one_file_edit_moves_an_edge(py_engine):
    before = neighbourhood(py_engine, "shop/retry.py", "get_backoff_time")
    assert ("shop/client.py", "fetch") in spans(before.callers)
    client = py_engine.root / "shop" / "client.py"
    client.write_text(
        "from .retry import Retry\n\n\ndef fetch(url):\n    return url\n\n\n"
        "def fetch_slowly(url):\n    return Retry(3).get_backoff_time(), url\n"
    )
    stats = py_engine.ensure_index()
    assert stats.changed == 1
    after = neighbourhood(py_engine, "shop/retry.py", "get_backoff_time")
    assert ("shop/client.py", "fetch_slowly") in spans(after.callers)
    assert ("shop/client.py", "fetch") not in spans(after.callers)


def test_go_edges_resolve_through_the_imported_package(engine_of):
    eng = engine_of("go", GO)
    do = neighbourhood(eng, "retry/retry.go", "Do")
    assert spans(do.callers) == [("main.go", "main")] and do.callers[0].resolution == "imported"
    assert spans(do.callees) == [("retry/retry.go", "Backoff")]
    backoff = neighbourhood(eng, "retry/retry.go", 4)
    assert spans(backoff.callers) == [("retry/retry.go", "Do")]
    # A hit's first line is often its doc comment: the line means the function below it.
    assert neighbourhood(eng, "retry/retry.go", 3).unit == backoff.unit
    with pytest.raises(RequestError, match="no definition holds"):
        neighbourhood(eng, "retry/retry.go", 1)
    assert spans(backoff.tests) == [("retry/retry_test.go", "TestBackoff")]


def test_a_hit_packing_two_functions_follows_both(engine_of):
    """``related PATH:START-END`` (``r`` on a hit): each definition packed in the lines, their
    lists merged; a use of one by the other is the hit's own code, listed by neither."""
    eng = engine_of("go", GO)
    lines = (eng.root / "retry/retry.go").read_text().splitlines()
    start = next(n for n, text in enumerate(lines, 1) if text.startswith("// Backoff"))
    end = max(n for n, text in enumerate(lines, 1) if text == "}")
    both = neighbourhood(eng, "retry/retry.go", (start, end))
    assert both.unit.name == "Backoff, Do" and both.unit.end_line == end
    assert spans(both.callers) == [("main.go", "main")]  # Do's; Backoff's caller Do is inside
    assert spans(both.tests) == [("retry/retry_test.go", "TestBackoff")]
    assert both.callees == [] and both.counts["callers"] == 1
    data = json.loads(run("related", f"retry/retry.go:{start}-{end}", "--root", str(eng.root), "--json").stdout)
    assert data["unit"]["name"] == "Backoff, Do" and [c["name"] for c in data["callers"]] == ["main"]
    # One definition in the lines is that definition; a class's lines are the class.
    assert neighbourhood(eng, "retry/retry.go", (start, start + 3)).unit.name == "Backoff"
    py = engine_of("py", PYTHON)
    text = (py.root / "shop/retry.py").read_text().splitlines()
    cls = next(n for n, t in enumerate(text, 1) if t.startswith("class Retry"))
    whole = neighbourhood(py, "shop/retry.py", (cls, cls + 10))
    assert whole.unit == neighbourhood(py, "shop/retry.py", "Retry").unit
    with pytest.raises(RequestError, match="ends before it starts"):
        answer_related(eng, f"retry/retry.go:{end}-{start}")


def test_a_hit_packing_many_functions_follows_the_first_eight(engine_of):
    funcs = (
        "\n".join(f"func F{i}() int {{ return F{i + 1}() }}\n" for i in range(11)) + "\nfunc F11() int { return 0 }\n"
    )
    eng = engine_of("many", {"go.mod": "module example.com/m\n", "m.go": "package m\n\n" + funcs})
    lines = (eng.root / "m.go").read_text().splitlines()
    found = neighbourhood(eng, "m.go", (3, len(lines)))
    assert found.unit.name == ", ".join(f"F{i}" for i in range(8)) and found.counts["unfollowed"] == 4
    # F7 calls F8, packed in the lines but not followed: inside them all the same.
    assert found.callers == [] and found.callees == []
    text = run("related", f"m.go:3-{len(lines)}", "--root", str(eng.root))
    assert text.returncode == 0 and "4 more definitions, not followed" in text.stdout


BOX = """
    class Box:
        size = 3

        # The lid:
        # Opens the lid and says so.
        def open(self):
            return lid(self.size)


    def lid(n):
        return n
    """


def test_a_line_of_a_methods_leading_comment_means_the_method(engine_of):
    """Inside a class, the comment above a method is the method's, not the class's (a hit
    often starts there, as in Java and PHP with their doc blocks)."""
    eng = engine_of("doc", {"box.py": BOX})
    lines = (eng.root / "box.py").read_text().splitlines()
    comment = next(n for n, t in enumerate(lines, 1) if "Opens the lid" in t)
    assert neighbourhood(eng, "box.py", comment).unit.name == "open"
    assert neighbourhood(eng, "box.py", comment - 1).unit.name == "open"  # the comment's first line
    assert neighbourhood(eng, "box.py", 2).unit.name == "Box"  # the class's own line


def test_typescript_edges(engine_of):
    eng = engine_of("ts", TYPESCRIPT)
    price = neighbourhood(eng, "src/format.ts", "formatPrice")
    assert spans(price.callers) == [("src/format.ts", "total")]
    assert spans(price.tests) == [("src/format.test.ts", "")]  # a test() call at module level
    cart = neighbourhood(eng, "src/format.ts", "Cart")
    assert spans(cart.callers) == [("src/checkout.ts", "checkout")]
    assert cart.callers[0].resolution == "imported"
    checkout = neighbourhood(eng, "src/checkout.ts", "checkout")
    assert ("src/format.ts", "Cart") in spans(checkout.callees)


def test_bad_places_are_one_line_errors(py_engine):
    for place, said in [
        ("shop/retry.py", "expected PATH:LINE"),
        ("shop/retry.py:0", "start at 1"),
        ("shop/nope.py:3", "no such file"),
        ("../etc/passwd:1", "outside the indexed folder"),
        ("shop/retry.py:1", "no definition holds this line"),
        ("shop/retry.py:nothing_here", "defines no 'nothing_here'"),
    ]:
        with pytest.raises(RequestError, match=said):
            answer_related(py_engine, place)
    assert parse_place("a/b.py:Retry.get_backoff_time") == ("a/b.py", "get_backoff_time")
    assert parse_place("a/b.py:40-75") == ("a/b.py", (40, 75))


def test_more_like_this_finds_the_look_alikes_and_leaves_the_unit_out(py_engine):
    request = check_request("", like="shop/other.py:get_backoff_time", top_k=5)
    data, hits, _skipped = answer_query(py_engine, request)
    assert data["like"]["path"] == "shop/other.py"
    assert not any(h.path == "shop/other.py" and h.start_line <= 3 for h in hits)
    assert "far/away.py" in [h.path for h in hits[:3]]
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_related_is_fast_once_the_files_are_read(py_engine):
    neighbourhood(py_engine, "shop/retry.py", "get_backoff_time")
    t0 = time.perf_counter()
    neighbourhood(py_engine, "shop/retry.py", "get_backoff_time")
    assert time.perf_counter() - t0 < 5  # no re-parse: a generous bound that load cannot break


def test_cli_related_json_and_errors(tmp_path):
    root = write(tmp_path / "py", PYTHON)
    out = run("related", "shop/retry.py:9", "--root", str(root), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) >= {"unit", "callers", "callees", "tests", "counts", "related_ms"}
    assert data["unit"]["name"] == "get_backoff_time"
    first = data["callers"][0]
    assert {"path", "start_line", "end_line", "name", "line", "via", "resolution", "candidates"} <= set(first)
    text = run("related", "shop/retry.py:get_backoff_time", "--root", str(root))
    assert text.returncode == 0 and "shop/client.py:4-7  fetch" in text.stdout
    for args in (
        ["shop/retry.py:1"],
        ["missing.py:3"],
        ["shop/retry.py"],
        ["shop/retry.py:5", "--limit", "0"],
        ["shop/retry.py:9-3"],
    ):
        bad = run("related", *args, "--root", str(root))
        assert bad.returncode == 2, (args, bad.stderr)
        assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    like = run("query", "--like", "shop/other.py:get_backoff_time", "--root", str(root), "--json")
    assert like.returncode == 0 and json.loads(like.stdout)["like"]["name"] == "get_backoff_time"


async def test_mcp_related_and_search_like(tmp_path):
    from test_mcp import call, refused, server

    root = write(tmp_path / "py", PYTHON)
    async with server(root) as session:
        data = await call(session, "related", {"place": "shop/retry.py:get_backoff_time"})
        assert [c["name"] for c in data["callers"]] == ["sleep_for", "fetch"]
        assert data["tests"][0]["path"] == "tests/test_retry.py" and "generation" in data
        said = await refused(session, "related", {"place": "shop/retry.py", "limit": 0})
        assert "limit" in said and "place" in said and "\n" not in said
        said = await refused(session, "related", {"place": "shop/retry.py:1"})
        assert "no definition holds this line" in said
        hit = await call(session, "related", {"place": "shop/client.py:4-11"})  # a hit's lines
        assert hit["unit"]["name"] == "fetch, describe" and hit["callees"]
        said = await refused(session, "related", {"place": "shop/client.py:11-4"})
        assert "ends before it starts" in said and "\n" not in said
        like = await call(session, "search", {"query": "", "like": "shop/other.py:get_backoff_time", "top_k": 3})
        assert like["like"]["path"] == "shop/other.py" and like["results"]


SAME_NAMES = {
    "app/streams.py": """
        class Stream:
            def close(self):
                return "stream"


        def close(thing):
            return thing.close()
        """,
    "app/sockets.py": """
        class Socket:
            def __init__(self):
                self.close = None  # an attribute of its own, not Stream.close

            def shut(self):
                return self.close
        """,
    "app/user.py": """
        from .streams import Stream, close


        def finish(s: Stream):
            return s.close()


        def finish_anything(x):
            return close(x)


        def both(s: Stream, x):
            return close(x), s.close()  # one line, a bare use and a member use of one name
        """,
}


def test_a_bare_call_is_the_function_and_a_member_call_the_method(engine_of):
    eng = engine_of("same", SAME_NAMES)
    method = neighbourhood(eng, "app/streams.py", 2)  # Stream.close
    assert spans(method.callers) == [("app/streams.py", "close"), ("app/user.py", "finish"), ("app/user.py", "both")]
    function = neighbourhood(eng, "app/streams.py", 6)  # the module's close()
    assert spans(function.callers) == [("app/user.py", "finish_anything"), ("app/user.py", "both")]
    # sockets.py's self.close is its own attribute: it is no caller of Stream.close
    assert "app/sockets.py" not in [p.path for p in method.callers]


def test_a_nested_function_returned_or_passed_has_its_outer_function_as_caller(engine_of):
    eng = engine_of(
        "nested",
        {
            "deco.py": """
        def route(path):
            def decorator(func):
                return func

            return decorator
        """
        },
    )
    found = neighbourhood(eng, "deco.py", "decorator")
    assert [(p.name, p.line, p.resolution) for p in found.callers] == [("route", 5, "same file")]


def test_a_member_of_a_nested_functions_name_is_not_its_outer_use(engine_of):
    # yup's `length()` passes an object whose `test()` method is nested in it to `this.test()`:
    # that call is the class's own method, not a use of the nested one (read in evals'
    # TypeScript reference run: each such `test` listed its outer method as its caller)
    eng = engine_of(
        "nested-member",
        {
            "src/schema.ts": """
        export class ArraySchema {
          length(n: number) {
            return this.test({
              name: 'length',
              test(value: number[]) {
                return value.length === n;
              },
            });
          }

          max(n: number) {
            const check = (value: number[]) => value.length <= n;
            return this.add([...check.name], check);
          }
        }
        """
        },
    )
    nested = neighbourhood(eng, "src/schema.ts", 5)  # the object's test()
    assert nested.unit.name == "test"
    assert nested.callers == []
    check = neighbourhood(eng, "src/schema.ts", 12)  # check: passed bare (a spread too)
    assert [(p.name, p.line) for p in check.callers] == [("max", 13)]


def test_a_function_named_like_a_class_keyword_holds_no_methods(engine_of):
    # superstruct's `function object(schema)` and `function record(…)` return `new Struct({
    # validator(value) {…} })`: the word in the name made them class-like, their objects'
    # methods methods, and every `s.validator()` in the file their caller (read in evals'
    # TypeScript reference run)
    eng = engine_of(
        "keyword-names",
        {
            "src/types.ts": """
        import { Struct } from './struct';

        export function object(schema: object) {
          return new Struct({
            validator(value: unknown) {
              return typeof value === 'object';
            },
          });
        }

        export function check(s: Struct, value: unknown) {
          return s.validator(value);
        }
        """,
            "src/struct.ts": """
        export class Struct {
          constructor(public props: any) {}

          validator(value: unknown) {
            return this.props.validator(value);
          }
        }
        """,
        },
    )
    literal = neighbourhood(eng, "src/types.ts", 6)  # the object literal's validator()
    assert literal.unit.name == "validator"
    assert literal.callers == []
    method = neighbourhood(eng, "src/struct.ts", "validator")  # the class's is still a method
    assert [(p.path, p.name) for p in method.callers] == [("src/types.ts", "check")]


def test_a_method_called_on_its_own_receiver_where_the_file_names_another_class(engine_of):
    # vitest's core.ts: `Vitest.close()` is called as `this.close()` in the class, and the
    # file imports `TestProject`, whose `close()` it calls too; the class's own name is not
    # spelled in the file outside its header (read in evals' TypeScript reference run)
    eng = engine_of(
        "own-receiver",
        {
            "node/core.ts": """
        import { TestProject } from './project';

        export class Vitest {
          projects: TestProject[] = [];

          async restart() {
            await this.close();
          }

          async closeProjects() {
            await Promise.all(this.projects.map((p) => p.close()));
          }

          async close() {
            await this.closeProjects();
          }
        }
        """,
            "node/project.ts": """
        export class TestProject {
          async close() {
            return undefined;
          }
        }
        """,
        },
    )
    found = neighbourhood(eng, "node/core.ts", "close")  # Vitest.close
    assert found.unit.context.endswith("Vitest > close")
    assert [(p.name, p.line) for p in found.callers] == [("restart", 7)]


def test_a_call_with_type_arguments_is_a_call(engine_of):
    # redux's applyMiddleware: `compose<typeof dispatch>(...chain)` (read in evals' TypeScript
    # reference run: the only caller of compose the name-based edges missed in redux)
    eng = engine_of(
        "type-arguments",
        {
            "src/compose.ts": """
        export function compose<R>(...funcs: Function[]): R {
          return funcs.reduce((a, b) => (...args: any) => a(b(...args))) as R;
        }
        """,
            "src/apply.ts": """
        import { compose } from './compose';

        export function apply(chain: Function[], dispatch: Function) {
          return compose<typeof dispatch>(...chain)(dispatch);
        }

        export function compare(count: number, max: number, y: number, z: number) {
          return count < max && y > (z);
        }
        """,
        },
    )
    found = neighbourhood(eng, "src/compose.ts", "compose")
    assert [(p.name, p.line) for p in found.callers] == [("apply", 4)]
    from ranklens.core.chunking.refs import qualified_uses

    assert qualified_uses("const d = createDefer<Map<string, T>>()")[0] == ("createDefer", None)
    assert qualified_uses("return count < max && y > (z);") == []


GO_ROOT_PACKAGE = {
    "go.mod": "module github.com/example/toml\n",
    "decode.go": """
        package toml

        import "time"

        type Decoder struct{ timeout time.Duration }

        func Decode(data string, v any) error {
        \treturn NewDecoder().Decode(v)
        }

        func NewDecoder() *Decoder {
        \treturn &Decoder{}
        }

        func (d *Decoder) Decode(v any) error {
        \treturn nil
        }

        func (d *Decoder) Duration() time.Duration {
        \treturn time.Duration(d.timeout)
        }
        """,
    "decode_test.go": """
        package toml_test

        import (
        \t"testing"

        \t"github.com/example/toml"
        )

        func TestDecode(t *testing.T) {
        \tif err := toml.Decode("a = 1", nil); err != nil {
        \t\tt.Fatal(err)
        \t}
        }
        """,
}


def test_a_go_package_at_the_module_root_is_called_by_its_package_clause(engine_of):
    # BurntSushi/toml's decode.go is `package toml` at the module's root: no folder names it,
    # and `toml.Decode()` from its external tests is the function's, not the method's; in
    # pflag, `time.Duration` is no call of `FlagSet.Duration` (read in evals' Go reference run)
    eng = engine_of("go-root", GO_ROOT_PACKAGE)
    function = neighbourhood(eng, "decode.go", 7)  # func Decode
    assert [(p.path, p.name) for p in function.tests] == [("decode_test.go", "TestDecode")]
    method = neighbourhood(eng, "decode.go", 15)  # (*Decoder).Decode
    assert [(p.path, p.name) for p in method.callers + method.tests] == [("decode.go", "Decode")]
    duration = neighbourhood(eng, "decode.go", 19)  # (*Decoder).Duration: time.Duration is none
    assert duration.unit.name == "Duration" and duration.callers == []


def test_a_go_unexported_type_is_used_where_only_a_type_stands(engine_of):
    # gin's authPair, pflag's *unknownFlagError, toml's menu: lowercase, so neither a call nor
    # a capitalised name; a literal, an element type and an assertion are uses of the type
    eng = engine_of(
        "go-types",
        {
            "go.mod": "module example.com/auth\n",
            "auth.go": """
        package auth

        type authPair struct {
        \tvalue string
        \tuser  string
        }

        type authPairs []authPair

        func processAccounts(users map[string]string) authPairs {
        \tpairs := make(authPairs, 0, len(users))
        \tfor user, value := range users {
        \t\tpairs = append(pairs, authPair{value: value, user: user})
        \t}
        \treturn pairs
        }

        func first(v any) string {
        \tif p, ok := v.(*authPair); ok {
        \t\treturn p.user
        \t}
        \treturn ""
        }
        """,
        },
    )
    found = neighbourhood(eng, "auth.go", 3)
    assert found.unit.name == "authPair"
    assert [(p.name, p.line) for p in found.callers] == [("authPairs", 8), ("processAccounts", 13), ("first", 19)]


def test_a_line_calling_a_package_named_like_an_import_keyword_is_code(engine_of):
    # gin's tests: `require.NoError(t, c.BindXML(&obj))` (testify) was read as an import line,
    # so the call on it was no use (read in evals' Go reference run)
    eng = engine_of(
        "go-require",
        {
            "go.mod": "module example.com/web\n",
            "context.go": """
        package web

        type Context struct{ body string }

        func (c *Context) BindXML(obj any) error {
        \treturn nil
        }
        """,
            "context_test.go": """
        package web

        import (
        \t"testing"

        \t"github.com/stretchr/testify/require"
        )

        func TestBindXML(t *testing.T) {
        \tc := &Context{}
        \trequire.NoError(t, c.BindXML(nil))
        }
        """,
        },
    )
    found = neighbourhood(eng, "context.go", "BindXML")
    assert [(p.name, p.line) for p in found.tests] == [("TestBindXML", 11)]


def test_during_a_first_build_related_answers_from_the_committed_files(stepped_repo, tmp_path, small_steps):
    from ranklens.core.graph.edges import LocalGraph

    files = {f"pkg/mod_{i}.py": f"def step_{i}(x):\n    return helper(x) + {i}\n" for i in range(30)}
    files["pkg/helpers.py"] = "def helper(x):\n    return x * 2\n"
    eng = Engine(write(stepped_repo, files), cache_dir=tmp_path / "cache")
    seen = []

    def on_partial(partial) -> None:
        graph = LocalGraph(eng.view)
        committed = eng.view.chunks.distinct_paths()
        users = {p.path for p in graph.users("helper")}
        seen.append((len(committed), users <= committed, len(users)))

    eng.ensure_index(deep=False, on_partial=on_partial)
    assert len(seen) >= 2 and all(within for _n, within, _u in seen)  # only committed files' edges
    assert [u for _n, _w, u in seen] == sorted(u for _n, _w, u in seen)  # more land at each step
    found = neighbourhood(eng, "pkg/helpers.py", "helper", limit=50)
    assert found.counts["callers"] == 30
    eng.close()


JAVA = {
    "src/main/java/app/Retryer.java": """
        package app;

        public interface Retryer {
          void pause(int attempt);
        }
        """,
    "src/main/java/app/Backoff.java": """
        package app;

        public class Backoff implements Retryer {
          public void pause(int attempt) {
            sleep(attempt * 2);
          }

          void sleep(int ms) {}
        }
        """,
    "src/main/java/app/Ticker.java": """
        package app;

        public class Ticker {
          public void pause(int attempt) {}
        }
        """,
    "src/main/java/app/Client.java": """
        package app;

        public class Client {
          private Retryer retryer;

          public void send() {
            retryer.pause(1);
          }
        }
        """,
}


def test_a_call_through_an_interface_reaches_its_implementation(engine_of):
    eng = engine_of("java", JAVA)
    backoff = neighbourhood(eng, "src/main/java/app/Backoff.java", "pause")
    assert ("src/main/java/app/Client.java", "send") in spans(backoff.callers)
    ticker = neighbourhood(eng, "src/main/java/app/Ticker.java", "pause")
    assert spans(ticker.callers) == []  # Client names Retryer, which Ticker does not implement
    assert [(p.name, p.resolution) for p in backoff.callees] == [("sleep", "same file")]  # bare, in its class


def test_a_decorator_is_a_use_of_its_function(engine_of):
    eng = engine_of(
        "deco2",
        {
            "lib/marks.py": "def traced(fn):\n    return fn\n",
            "lib/jobs.py": ("from .marks import traced\n\n\n@traced\ndef run():\n    return 1\n"),
        },
    )
    found = neighbourhood(eng, "lib/marks.py", "traced")
    assert [(p.path, p.name, p.line) for p in found.callers] == [("lib/jobs.py", "run", 4)]


COPIES = {
    "pkg/fields.py": "class Field:\n    def merge(self):\n        return 1\n",
    "pkg/v1/fields.py": (
        "class Field:\n    def merge(self):\n        return 2\n\n    def both(self):\n        return self.merge()\n"
    ),
    "pkg/v1/models.py": "from pkg.v1.fields import Field\n\n\ndef make():\n    return Field().merge()\n",
    "pkg/app.py": "from pkg.fields import Field\n\n\ndef build():\n    return Field().merge()\n",
    "pkg/typing_extra.py": "def get_hints(x):\n    return x\n",
    "pkg/v1/typing.py": "from typing import get_hints\n\n\ndef hints(obj):\n    return get_hints(obj)\n",
    "pkg/mocks.py": (
        "def set_a():\n    def rebuild():\n        return 1\n\n    return rebuild()\n\n\n"
        "def set_b():\n    def rebuild():\n        return 2\n\n    return rebuild()\n"
    ),
}


def test_a_copied_class_a_name_imported_from_elsewhere_and_nested_functions(engine_of):
    eng = engine_of("copies", COPIES)
    # pkg/fields.py's Field and its copy in pkg/v1: an import naming more of a module's path
    # means that one (pkg.v1.fields), a copy's own file means its own.
    assert spans(neighbourhood(eng, "pkg/fields.py", "merge").callers) == [("pkg/app.py", "build")]
    copy = neighbourhood(eng, "pkg/v1/fields.py", 2)
    assert {("pkg/v1/fields.py", "both"), ("pkg/v1/models.py", "make")} <= set(spans(copy.callers))
    # pkg/v1/typing.py imports get_hints from the standard library, not from pkg/typing_extra.py.
    assert spans(neighbourhood(eng, "pkg/typing_extra.py", "get_hints").callers) == []
    # A nested function is called only inside the function defining it.
    assert spans(neighbourhood(eng, "pkg/mocks.py", 2).callers) == [("pkg/mocks.py", "set_a")]
    assert spans(neighbourhood(eng, "pkg/mocks.py", 9).callers) == [("pkg/mocks.py", "set_b")]


def test_a_name_through_an_imported_module_is_not_a_same_named_definition(engine_of):
    eng = engine_of(
        "modq",
        {
            "net/retry.py": (
                "import time\n\n\nclass Retry:\n    def sleep(self):\n        return 1\n\n"
                "    def backoff(self):\n        time.sleep(1)\n        return self.sleep()\n"
            )
        },
    )
    found = neighbourhood(eng, "net/retry.py", "backoff")
    assert [(p.name, p.line) for p in found.callees] == [("sleep", 10)]  # self.sleep(), not time.sleep()


def _long_class(methods: int) -> str:
    body = "".join(
        f"    def step_{i}(self, n):\n"
        + "".join(f"        n = n + {j}  # step {i}.{j}\n" for j in range(8))
        + "        return n\n\n"
        for i in range(methods)
    )
    return (
        "from .defaults import make_default\n\n\n"
        "class Registry:\n"
        "    DEFAULT = make_default()\n\n" + body + "    def rebuild(self):\n        return make_default()\n"
    )


def test_callers_read_from_their_chunk_keep_the_file_s_units(engine_of):
    # A caller's place is read from its chunk alone, not its file; where the unit runs on past
    # the chunk (a class whose methods are chunked apart) the file says where it ends.
    text = _long_class(14)
    eng = engine_of("chunkread", {"pkg/defaults.py": "def make_default():\n    return 1\n", "pkg/registry.py": text})
    lines = text.splitlines()
    found = neighbourhood(eng, "pkg/defaults.py", "make_default")
    places = {(p.name, p.start_line, p.end_line, p.context) for p in found.callers}
    rebuild = lines.index("    def rebuild(self):") + 1
    assert places == {
        ("Registry", 4, len(lines), "pkg/registry.py > Registry"),
        ("rebuild", rebuild, rebuild + 1, "pkg/registry.py > Registry > rebuild"),
    }


def test_a_c_prototype_in_a_header_is_not_a_caller(engine_of):
    header = "#ifndef NET_H\n#define NET_H\nstruct sock;\n" + "".join(
        f"int sock_op_{i}(struct sock *s, int n);\n" for i in range(70)
    )
    header += "int sock_send(struct sock *s, int n);\n#define SEND_ALL(s) sock_send(s, -1)\n#endif\n"
    eng = engine_of(
        "cproto",
        {
            "include/net.h": header,
            "net/sock.c": '#include "net.h"\n\nint sock_send(struct sock *s, int n)\n{\n\treturn n;\n}\n',
            "drivers/nbd.c": '#include "net.h"\n\nstatic int nbd_xmit(struct sock *s)\n{\n\treturn sock_send(s, 1);\n}\n',
        },
    )
    found = neighbourhood(eng, "net/sock.c", "sock_send")
    macro = header.splitlines().index("#define SEND_ALL(s) sock_send(s, -1)") + 1
    # The macro's use once, though two overlapping windows of the header hold it; no prototype.
    assert sorted((p.path, p.name, p.line) for p in found.callers) == [
        ("drivers/nbd.c", "nbd_xmit", 5),
        ("include/net.h", "", macro),
    ]
