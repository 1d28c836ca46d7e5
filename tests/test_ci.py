"""CI's test command (README, `.ci/run`): a hang fails fast and shows every thread's stack,
also when the suite runs on two pytest-xdist workers."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HANGING = textwrap.dedent(
    """
    import threading

    def wait_for_a_lock_nobody_releases():
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()

    def test_hangs():
        threading.Thread(target=wait_for_a_lock_nobody_releases, name="stuck-helper", daemon=True).start()
        wait_for_a_lock_nobody_releases()

    def test_passes():
        assert 1 + 1 == 2
    """
)


def _ci_pytest_args() -> list[str]:
    """The arguments `.ci/run` gives pytest: `run_tests.py`'s, the README's second command."""
    assert "python3 run_tests.py --lint" in (ROOT / ".ci" / "run").read_text()
    assert "python3 run_tests.py" in (ROOT / "README.md").read_text(), "the README's test command is not CI's"
    sys.path.insert(0, str(ROOT))
    try:
        import run_tests
    finally:
        sys.path.remove(str(ROOT))
    return list(run_tests.PYTEST_ARGS)


@pytest.mark.slow
def test_a_hung_test_under_cis_command_fails_fast_with_every_threads_stack(tmp_path):
    (tmp_path / "test_hang.py").write_text(HANGING)
    args = _ci_pytest_args()
    assert "-n" in args, "CI runs the suite on two workers"
    # A worker's pytest-timeout report dies with it: faulthandler must dump the stacks first.
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert ini["timeout_method"] == "thread"
    assert 0 < float(ini["faulthandler_timeout"]) < float(ini["timeout"])
    # The project's own settings, with both limits shortened in the same order.
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml")]
    cmd += ["--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "tmp"), "-o", "timeout=6"]
    cmd += ["-o", "faulthandler_timeout=3", str(tmp_path)]
    # The 240 s bound only keeps a broken setting from stalling the suite; what this checks is
    # that the 6 s pytest-timeout ended the hang (its report names the timeout), not the clock.
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert re.search(r"1 failed, 1 passed", out), out[-2000:]
    # Every thread's stack: the test's own and its helper thread's, both in the function that waits.
    assert out.count("wait_for_a_lock_nobody_releases") >= 2, out[-3000:]
    assert "test_hangs" in out
    assert "Timeout" in out, out[-2000:]


def _run_tests_module():
    sys.path.insert(0, str(ROOT))
    try:
        import run_tests
    finally:
        sys.path.remove(str(ROOT))
    return run_tests


@pytest.mark.parametrize("green", [True, False])
def test_run_tests_says_what_it_does_and_how_long_it_took_and_cleans_its_temporary_files(
    tmp_path, monkeypatch, capsys, green
):
    """Issue 43: what it installs, before; its duration, after; pytest's temporary files in
    one folder of the checkout's, removed after a green run, kept and named after a red one."""
    run_tests = _run_tests_module()
    assert run_tests.BASETEMP.name.startswith("ranklens-tests-")
    basetemp = tmp_path / "pytest-tmp"  # not the checkout's: a suite may be using that
    monkeypatch.setattr(run_tests, "BASETEMP", basetemp)
    monkeypatch.setattr(run_tests, "ensure", lambda extras: Path(sys.executable))  # start.py's: test_launcher.py
    test = "def test_it(tmp_path):\n    (tmp_path / 'made').write_text('x')\n    assert {}\n"
    (tmp_path / "test_it.py").write_text(test.format(green))
    args = [str(tmp_path / "test_it.py"), "-n", "0", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    status = run_tests.main([*args, "-c", str(ROOT / "pyproject.toml")])
    err = capsys.readouterr().err
    assert err.startswith("run_tests: installs ranklens[deep,milvus,test] into .venv"), err
    if green:
        assert status == 0 and not basetemp.exists()
        assert re.search(r"run_tests: passed in \d+ s \((\d+ min )?\d+ s of CPU\)\n$", err), err
    else:
        assert status == 1 and list(basetemp.rglob("made")), "kept after a failure"
        kept = rf"run_tests: failed \(exit 1\) in \d+ s \(.+ of CPU\); its temporary files are in {re.escape(str(basetemp))}"
        assert re.search(kept, err), err


def test_the_whole_suite_is_announced_with_how_long_it_takes(monkeypatch, capsys):
    run_tests = _run_tests_module()
    monkeypatch.setattr(run_tests, "ensure", lambda extras: (_ for _ in ()).throw(SystemExit("stop here")))
    with pytest.raises(SystemExit, match="stop here"):
        run_tests.main([])
    line = capsys.readouterr().err.strip()
    assert f"the whole suite on two cores (about {run_tests.SUITE_MINUTES} min" in line, line
