"""The distribution installs one import package, ``ranklens``, and runs from it."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    [found] = out.glob("ranklens-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_holds_nothing_but_ranklens(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"ranklens", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert "ranklens/core/engine.py" in names and "ranklens/tui/app.py" in names
    assert "ranklens/tui/app.tcss" in names and "ranklens/core/schemas/handoff.schema.json" in names
    assert any(n.startswith("ranklens/core/models/ranklens-code/") for n in names)
    # The sample repository `python3 start.py` opens outside a repository, in five languages.
    sample = {n.removeprefix("ranklens/sample_repo/") for n in names if n.startswith("ranklens/sample_repo/")}
    assert {"app/auth.py", "web/router.js", "server/main.go", "engine/src/lib.rs", "docs/guide.md"} <= sample
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


@pytest.mark.slow
def test_an_installed_wheel_runs_the_command_the_module_and_the_ui(wheel, tmp_path, sample_repo):
    # A fresh environment that sees this one's dependencies but not the checkout. Not
    # system_site_packages: run from inside a venv, that would show the base interpreter's
    # packages, not this venv's. A .pth file lists this interpreter's site-packages instead (a
    # folder a .pth adds is not scanned for .pth files of its own, so the checkout's editable
    # finder stays out).
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    [own] = (env_dir / "lib").glob("python3*/site-packages")
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (own / "zz_outer_site.pth").write_text("".join(f"{p}\n" for p in ours))
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--force-reinstall",
            "-q",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean,
    )

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=clean)

    where = run(str(python), "-c", "import ranklens.core, ranklens.tui; print(ranklens.core.__file__)")
    assert where.returncode == 0 and str(env_dir) in where.stdout, where.stderr
    assert str(REPO) not in where.stdout
    for top in ("core", "tui"):
        assert run(str(python), "-c", f"import {top}").returncode != 0  # nothing else installed
    assert run(str(python), "-m", "ranklens", "--version").stdout.startswith("ranklens, version")
    query = run(str(env_dir / "bin" / "ranklens"), "query", "how are passwords hashed", "--root", str(sample_repo))
    assert query.returncode == 0 and query.stdout.startswith("app/auth.py"), query.stderr
    # The sample repository ships inside the installed package and answers the same question.
    sample = run(str(python), "-c", "import ranklens; print(ranklens.SAMPLE_REPO)").stdout.strip()
    assert sample.startswith(str(env_dir)), sample
    query = run(str(env_dir / "bin" / "ranklens"), "query", "how are passwords hashed", "--root", sample)
    assert query.returncode == 0 and query.stdout.startswith("app/auth.py"), query.stderr
    # The extra hint installs from where this copy came from (the wheel), with its interpreter.
    hint = run(str(python), "-c", "from ranklens.core.base.install_hint import pip_hint; print(pip_hint('deep'))")
    # (run here in tmp_path, so the interpreter is named by its path from here: venv/bin/python).
    assert hint.stdout.strip() == f"{python.relative_to(tmp_path)} -m pip install '{wheel}[deep]'", hint.stderr
    ui = run(
        str(python),
        "-c",
        "import asyncio\n"
        "from ranklens.core.service import open_engine\n"
        "from ranklens.core.session import Session\n"
        "from ranklens.tui.app import RanklensApp\n"
        f"app = RanklensApp(session=Session(open_engine({str(sample_repo)!r})))\n"
        "async def main():\n"
        "    async with app.run_test() as pilot:\n"
        "        while not app.index_ready:\n"
        "            await pilot.pause(0.05)\n"
        "        print('ui ok', len(app.arms))\n"
        "asyncio.run(main())\n",
    )
    assert ui.returncode == 0 and "ui ok" in ui.stdout, ui.stderr
