"""Every ranking of a small real repository, against the stored dump (written before the query
pipeline was split into stages, 101b972, and again for each change meant to move rankings:
ranklens's own model): a change to grouping, fusion, the ranking stage, the chunk step,
labelling or the model that moves any hit or any field of one fails here. The stored dump holds
15 questions over tests/fixtures/ranklens_snapshot/src, each searched, then re-fused with
every variant of evals/rankings.py (top 10/50/all, two other weight and k sets, without the
stage, without the chunk step, 10 top files, each arm alone, a plain mapping, asked again in
reverse order): 405 rankings, each exact but for its floats, which are summed and compared
within 1e-5 (their last bits differ between CPUs).

A change meant to move rankings rewrites it deliberately: ``python -m evals.rankings fixture``.
"""

from __future__ import annotations

import json

from evals.rankings import FIXTURE_FILE, fixture_rankings, same


def test_every_ranking_is_the_stored_one(tmp_path):
    stored = json.loads(FIXTURE_FILE.read_text())
    got = fixture_rankings(tmp_path / "cache")
    assert sorted(got) == sorted(stored)
    differ = [
        f"{query!r} {name}: {stored[query].get(name)} -> {ranking}"
        for query, rankings in sorted(got.items())
        for name, ranking in sorted(rankings.items())
        if not same(stored[query].get(name), ranking)
    ]
    assert not differ, "\n".join(differ)
    assert sum(len(r) for r in got.values()) == sum(len(r) for r in stored.values())
