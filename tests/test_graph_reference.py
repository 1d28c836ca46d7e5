"""What `evals/graph_reference.py` counts (its figures in docs/benchmarks.md, "Following the
code", rest on these rules): the tool's references mapped to their enclosing units, the
metrics, the adjudication's verdicts, and the TypeScript reference tool (a real Node process,
skipped where node or the typescript package is not installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from evals.graph_reference import (
    GoTypes,
    TypeScriptService,
    _units,
    reference_units,
    sample_definitions,
    score,
    totals,
    verdict,
)

MODULE = """
def helper(x):
    return x * 2


def user(x):
    return helper(x) + 1


class Box:
    def twice(self, x):
        return helper(helper(x))


VALUE = helper(3)
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def the(defs, name):
    return next(d for d in defs if d.symbol == name)


def test_references_map_to_their_enclosing_units_less_the_definition_and_module_level(tmp_path):
    root = write(
        tmp_path,
        {"pkg/mod.py": MODULE, "pkg/other.py": "from .mod import helper\n\n\ndef go():\n    return helper(1)\n"},
    )
    sampled = sample_definitions(root, ["pkg/mod.py", "pkg/other.py"], 1, 100)
    assert [d.symbol for d in sampled] == ["Box"]  # helper, user, twice, go: under 3 lines
    helper = the(_units(root, "pkg/mod.py").defs, "helper")
    refs = [
        ("pkg/mod.py", 1, False),  # the definition itself (its name's line)
        ("pkg/mod.py", 6, False),  # user
        ("pkg/mod.py", 11, False),  # Box.twice, twice on its line: one unit, the innermost
        ("pkg/mod.py", 11, False),
        ("pkg/mod.py", 14, False),  # module level: no unit
        ("pkg/other.py", 1, True),  # the import's binding
        ("pkg/other.py", 5, False),  # go
    ]
    units, outside = reference_units(root, helper, (1, 4), refs)
    assert units == {("pkg/mod.py", 5, 6): 6, ("pkg/mod.py", 10, 11): 11, ("pkg/other.py", 4, 5): 5}
    assert outside == 1


def test_score_and_totals_count_recall_precision_at_ten_and_misses_inside_the_definition():
    ref = {("a.ts", 1, 5): 2, ("a.ts", 10, 20): 12, ("b.ts", 3, 9): 4}
    ours = [("b.ts", 3, 9, 4), ("c.ts", 1, 2, 1), ("d.ts", 1, 2, 1)]
    row = score(
        "a.ts:1 Thing", ref, ours, {("c.ts", 1, 2): "tool missed", ("d.ts", 1, 2): "edge wrong"}, ("a.ts", 1, 30)
    )
    assert (row["tool"], row["ranklens"], row["recalled"], row["top10"], row["top10_in_tool"]) == (3, 3, 1, 3, 1)
    assert (row["top10_tool_missed"], row["top10_edge_wrong"], row["missed_inside"]) == (1, 1, 2)
    ten = [(f"e{i}.ts", 1, 2, 1) for i in range(12)]
    other = score("e.ts:1 f", {("e0.ts", 1, 2): 1, ("zz.ts", 1, 2): 1}, ten, {})
    t = totals([row, other])
    assert t["recall"] == pytest.approx(2 / 5)
    assert t["top10"] == 13 and t["precision_at_10"] == pytest.approx(2 / 13)
    assert t["precision_at_10_adjudicated"] == pytest.approx(3 / 13)
    assert (t["top10_edge_wrong"], t["top10_unresolved"]) == (1, 13 - 2 - 1 - 1)


def test_a_use_is_adjudicated_by_where_the_tool_goes_from_it(tmp_path):
    root = write(tmp_path, {"pkg/mod.py": MODULE})
    helper = the(_units(root, "pkg/mod.py").defs, "helper")
    assert verdict(helper, [("pkg/mod.py", 1)]) == "tool missed"
    assert verdict(helper, [("pkg/other.py", 1), (None, None)]) == "edge wrong"
    assert verdict(helper, []) == verdict(helper, None) == "unresolved"


def _typescript_dir() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    where = os.environ.get("TYPESCRIPT_DIR") or os.getcwd()
    probe = subprocess.run(
        [node, "-e", "require.resolve('typescript', {paths: [process.argv[1]]})", where],
        capture_output=True,
    )
    return where if probe.returncode == 0 else None


SHAPES = {
    "src/shape.ts": """
        export interface Shape {
          area(): number;
        }
        """,
    "src/square.ts": """
        import { Shape } from './shape';

        export class Square implements Shape {
          constructor(private side: number) {}

          area(): number {
            return this.side * this.side;
          }
        }

        export class Circle implements Shape {
          constructor(private r: number) {}

          area(): number {
            return 3 * this.r * this.r;
          }
        }
        """,
    "src/use.ts": """
        import { Shape } from './shape';
        import { Circle, Square } from './square';

        export function total(shapes: Shape[]) {
          return shapes.reduce((n, s) => n + s.area(), 0);
        }

        export function square(q: Square) {
          return q.area();
        }

        export function circle(c: Circle) {
          return c.area();
        }
        """,
}


def test_the_language_service_lists_uses_through_the_interface_not_a_siblings(tmp_path, monkeypatch):
    where = _typescript_dir()
    if where is None:
        pytest.skip("node or the typescript package is not installed (npm install typescript; TYPESCRIPT_DIR)")
    monkeypatch.setenv("TYPESCRIPT_DIR", where)
    root = write(tmp_path, SHAPES)
    tool = TypeScriptService(root, sorted(SHAPES))
    try:
        refs = tool.references("src/square.ts", 6, 2)  # Square.area
        uses = sorted((f, ln) for f, ln, definition in refs if not definition)
        # total's s.area() through Shape, square's q.area(); not circle's c.area() (Circle's)
        assert uses == [("src/use.ts", 5), ("src/use.ts", 9)]
        declared = sorted((f, ln) for f, ln, definition in refs if definition)
        assert ("src/square.ts", 6) in declared and ("src/shape.ts", 2) in declared
        assert tool.last_kind == "MethodDeclaration"
        assert tool.goto("src/use.ts", 13, 11) == [("src/square.ts", 14)]  # c.area -> Circle's
        assert tool.references("src/use.ts", 3, 0) is None  # a blank line: no symbol
    finally:
        tool.close()


GO_MODULE = {
    "go.mod": "module example.com/shapes\n\ngo 1.19\n",
    "shapes.go": """
        package shapes

        import "fmt"

        type square struct{ side int }

        func (s square) Area() int {
            return s.side * s.side
        }

        type circle struct{ r int }

        func (c circle) Area() int {
            return 3 * c.r * c.r
        }

        func Describe(sq square, c circle) string {
            return "é" + fmt.Sprint(sq.Area(), c.Area())
        }
        """,
    "shapes_test.go": """
        package shapes_test

        import (
            "testing"

            "example.com/shapes"
        )

        func TestDescribe(t *testing.T) {
            _ = shapes.Describe
        }
        """,
}


def test_go_types_lists_the_uses_of_one_method_not_a_same_named_ones(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("go is not installed (apt-get install golang-go)")
    root = write(tmp_path, GO_MODULE)
    tool = GoTypes(root, sorted(GO_MODULE))
    try:
        refs = tool.references("shapes.go", 7, 16)  # square.Area
        assert sorted(refs) == [("shapes.go", 7, True), ("shapes.go", 18, False)]
        assert tool.last_kind == "method"
        line = (root / "shapes.go").read_text().split("\n")[17]
        assert tool.goto("shapes.go", 18, line.index("c.Area") + 2) == [("shapes.go", 13)]  # circle's
        describe = tool.references("shapes.go", 17, 5)
        assert ("shapes_test.go", 10, False) in describe  # from the external test package
        ((where, _line),) = tool.goto("shapes.go", 18, line.index("Sprint"))
        assert where is None  # the standard library's: outside the root
    finally:
        tool.close()
