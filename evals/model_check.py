"""A static model measured where ranklens uses it: the span set and the benchmark's dev split,
fused (the default arms and settings) and with the dense arm alone, in one process.

    python -m evals.model_check                          # the bundled model
    python -m evals.model_check --model /tmp/candidate   # any model2vec folder, as if bundled
    python -m evals.model_check --model /tmp/c --set spans --json /tmp/c.json

``--model`` stands in for the bundled model (the engine loads it as its default), each model
in an index cache of its own, so candidates never share vectors. Prints one line per set and
view, with the per-language (dev split) or per-repository (span set) figures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None, help="model2vec folder to use as the bundled model")
    ap.add_argument("--set", choices=("spans", "bench", "both"), default="both")
    ap.add_argument("--bench", default=None)
    ap.add_argument("--no-dense-alone", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the summaries here")
    args = ap.parse_args(argv)

    from ranklens.core.text import embedding

    if args.model is not None:
        embedding.DEFAULT_MODEL_DIR = args.model.resolve()
    folder = embedding.DEFAULT_MODEL_DIR
    tag = hashlib.sha256((folder / "model.safetensors").read_bytes() + (folder / "tokenizer.json").read_bytes())
    tag = tag.hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / "ranklens-model-check" / tag
    os.environ["RANKLENS_CACHE_DIR"] = str(cache)

    from evals import codesearch, spans

    bench = codesearch.bench_dir(args.bench)
    out: dict = {"model": str(embedding.DEFAULT_MODEL_DIR), "sha": tag}
    views = [("fused", None)] + ([] if args.no_dense_alone else [("dense", ["dense"])])
    if args.set in ("spans", "both"):
        repos = spans.load(bench)
        for view, arms in views:
            runs = [codesearch.collect(r, arms=arms, cache_dir=cache / r.name) for r in repos]
            s = spans.summary(spans.score(runs))
            out[f"spans_{view}"] = {k: v for k, v in s.items()}
            print(spans.line(f"spans {view:5s}", s), flush=True)
            print("  by repo: " + "  ".join(f"{k}={v:.3f}" for k, v in s["by_repo"].items()), flush=True)
    if args.set in ("bench", "both"):
        repos = codesearch.load(bench)
        for view, arms in views:
            runs = [codesearch.collect(r, arms=arms, cache_dir=cache / r.name) for r in repos]
            s = codesearch.summary(codesearch.score(runs))
            out[f"bench_{view}"] = s
            cats = " ".join(f"{c}={v:.3f}" for c, v in s["by_category"].items())
            print(f"bench {view:5s}: overall={s['overall']:.3f} {cats} lines={s['mean_hit_lines']:.1f}", flush=True)
            print("  by language: " + "  ".join(f"{k}={v:.3f}" for k, v in s["by_language"].items()), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
