"""Credentials never reach the index, an export, a preview or an answer (issue #14, item 6).

Every fake credential below is assembled at run time from pieces, so this file holds none in
a form a scanner (or a code host's push protection) would flag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
from pathlib import Path

import pytest
from cli_helpers import run

from ranklens.core.engine import Engine
from ranklens.core.handoff import envelope, span_sha256, span_text
from ranklens.core.storage.store import connect, unpack_text
from ranklens.core.text import secrets
from ranklens.core.text.secrets import MARKER, find, is_secret_name, redact

ARMS = ("bm25", "fts5", "dense", "symbols")
_rng = random.Random(14)


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _key_body(lines: int) -> list[str]:
    body = base64.b64encode(bytes(_rng.randrange(256) for _ in range(48 * lines))).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


BEGIN = "-----" + "BEGIN "
END = "-----" + "END "

# (file, its text with {c} where the credential goes, the credential). Each file also holds an
# ordinary word of its own (``zq`` + its name) that must stay searchable.
CORPUS: list[tuple[str, str, str]] = [
    (
        "deploy.sh",
        "#!/bin/sh\n# zqdeploy the release bucket\nexport AWS_ACCESS_KEY_ID={c}\n",
        "AKIA" + _pick(UPPER_DIGITS, 16),
    ),
    (
        "deploy2.sh",
        "#!/bin/sh\n# zqdeploytwo sync\nexport AWS_SECRET_ACCESS_KEY={c}\naws s3 sync . s3://b\n",
        _pick(B64, 40),
    ),
    (
        "infra/main.tf",
        'provider "aws" {{\n  region     = "eu-west-1"  # zqterraform\n  secret_key = "{c}"\n}}\n',
        _pick(B64, 40),
    ),
    (
        "tests/fixtures/github_api.json",
        '{{\n  "note": "zqfixture",\n  "token": "{c}"\n}}\n',
        "gh" + "p_" + _pick(ALNUM, 36),
    ),
    (
        "tests/test_oauth.py",
        '# zqoauth\ndef test_login():\n    token = "{c}"\n    assert token\n',
        "gh" + "o_" + _pick(ALNUM, 36),
    ),
    (
        "scripts/gh.sh",
        "# zqgithubcli login\ngh auth login --with-token <<< {c}\n",
        "github" + "_pat_" + _pick(ALNUM, 22) + "_" + _pick(ALNUM, 59),
    ),
    (
        "config/notify.yaml",
        "notifications:\n  channel: zqalerts\n  webhook: {c}\n",
        "https://hooks."
        + "slack.com/services/T"
        + _pick(UPPER_DIGITS, 8)
        + "/B"
        + _pick(UPPER_DIGITS, 8)
        + "/"
        + _pick(ALNUM, 24),
    ),
    (
        "app/settings.py",
        'DEBUG = False  # zqsettings\nSLACK_BOT_TOKEN = "{c}"\n',
        "xo" + "xb-" + _pick(string.digits, 12) + "-" + _pick(string.digits, 12) + "-" + _pick(LOWER_ALNUM, 24),
    ),
    ("web/payments.js", '// zqcheckout page\nconst stripe = Stripe("{c}");\n', "sk" + "_live_" + _pick(ALNUM, 24)),
    ("scripts/refund.rb", "# zqrefund batch\nStripe.api_key = '{c}'\n", "rk" + "_live_" + _pick(ALNUM, 24)),
    ("ci/pipeline.yml", "variables:\n  STAGE: zqpipeline\n  GITLAB_TOKEN: {c}\n", "gl" + "pat-" + _pick(URLSAFE, 20)),
    (
        "Dockerfile",
        'FROM node:20\n# zqdocker image\nRUN echo "//registry.npmjs.org/:_authToken={c}" > /root/.npmrc\n',
        "npm" + "_" + _pick(ALNUM, 36),
    ),
    (
        "ci/release.yml",
        "publish:\n  name: zqrelease\n  password: {c}\n",
        "pypi" + "-AgEIcHlwaS5vcmc" + _pick(URLSAFE, 80),
    ),
    (
        "app/mail.py",
        '# zqmailer\nSENDGRID_API_KEY = "{c}"\n',
        "SG" + "." + _pick(URLSAFE, 22) + "." + _pick(URLSAFE, 43),
    ),
    (
        "docs/api.md",
        '# zqapiguide\n\n    curl -H "Authorization: Bearer {c}" https://api.example.com/me\n',
        "ey"
        + _b64url({"alg": "HS256", "typ": "JWT"})[2:]
        + "."
        + _b64url({"sub": "1234567890", "name": "zq"})
        + "."
        + _pick(URLSAFE, 43),
    ),
    (
        "docker-compose.yml",
        "services:\n  web:  # zqcompose\n    environment:\n      DATABASE_URL: postgres://app:{c}@db:5432/app\n",
        "Tr0ub4dor" + _pick(ALNUM, 6),
    ),
    (
        "notebooks/analysis.py",
        '# zqnotebook cell\nopenai.api_key = "{c}"\n',
        "sk-" + _pick(ALNUM, 20) + "T3Blbk" + "FJ" + _pick(ALNUM, 20),
    ),
    ("app/llm.py", '# zqllm client\nOPENAI_API_KEY = "{c}"\n', "sk-" + "proj-" + _pick(URLSAFE, 48)),
    ("app/claude.py", '# zqassistant\nclient = Anthropic(api_key="{c}")\n', "sk-" + "ant-api03-" + _pick(URLSAFE, 80)),
    (
        "config/app.ini",
        "[twilio]\n; zqsms gateway\napi_key = {c}\n",
        "SK" + _pick(string.ascii_lowercase[:6] + string.digits, 32),
    ),
    (
        "appsettings.json",
        '{{\n  "Name": "zqdotnet",\n  "Storage": "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={c};EndpointSuffix=core.windows.net"\n}}\n',
        _pick(B64, 86) + "==",
    ),
    ("app/newsletter.py", '# zqnewsletter\nMAILCHIMP_KEY = "{c}"\n', _pick(string.digits + "abcdef", 32) + "-us6"),
    ("app/pos.py", '# zqpointofsale\nSQUARE_SECRET = "{c}"\n', "sq0" + "csp-" + _pick(URLSAFE, 43)),
    ("bots/telegram.py", '# zqtelegram bot\nTOKEN = "{c}"\n', _pick(string.digits, 9) + ":AA" + _pick(URLSAFE, 33)),
    (
        "bots/discord.js",
        '// zqdiscord bot\nclient.login("{c}");\n',
        "M" + _pick(URLSAFE, 23) + "." + _pick(URLSAFE, 6) + "." + _pick(URLSAFE, 27),
    ),
    ("web/maps.js", '// zqmaps widget\nconst key = "{c}";\n', "AI" + "za" + _pick(URLSAFE, 35)),
]
# Private keys: a short block (the probe of issue #14) in YAML, and a service-account JSON.
_short = _pick(B64, 24)
CORPUS.append(
    (
        "config/service.yaml",
        "name: zqservice\ntls_key: |\n  "
        + BEGIN
        + "RSA PRIVATE KEY-----\n  {c}\n  "
        + END
        + "RSA PRIVATE KEY-----\nport: 8443\n",
        _short,
    )
)
_body = _key_body(3)
CORPUS.append(
    (
        "config/gcp.json",
        '{{\n  "type": "service_account",\n  "project_id": "zqgcp",\n  "private_key": "'
        + BEGIN
        + "PRIVATE KEY-----\\n"
        + _body[0]
        + "\\n{c}\\n"
        + END
        + 'PRIVATE KEY-----\\n",\n'
        + '  "client_email": "indexer@example.iam.gserviceaccount.com"\n}}\n',
        _body[1],
    )
)


def _write_corpus(root: Path) -> Path:
    for rel, template, cred in CORPUS:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        previous = path.read_text() if path.exists() else ""
        path.write_text(previous + template.format(c=cred), encoding="utf-8")
    return root


def _word(rel: str) -> str:
    """The ordinary word of ``rel`` (``zq…``), which stays searchable."""
    template = next(t for r, t, _ in CORPUS if r == rel)
    return re.search(r"\bzq[a-z]+", template).group(0)


@pytest.fixture(scope="module")
def corpus_engine(tmp_path_factory):
    import os

    root = _write_corpus(tmp_path_factory.mktemp("corpus") / "repo")
    cache = tmp_path_factory.mktemp("corpus-cache")
    old = os.environ.get("RANKLENS_DEEP")
    os.environ["RANKLENS_DEEP"] = "0"
    engine = Engine(root, cache_dir=cache)
    try:
        stats = engine.ensure_index()
        yield engine, stats
    finally:
        engine.close()
        if old is None:
            os.environ.pop("RANKLENS_DEEP", None)
        else:
            os.environ["RANKLENS_DEEP"] = old


def test_the_corpus_is_big_enough():
    assert len(CORPUS) >= 20
    assert len({c for _, _, c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("rel, template, cred", CORPUS, ids=[r for r, _, _ in CORPUS])
def test_every_credential_is_found_and_its_line_redacted(rel, template, cred):
    text = template.format(c=cred)
    found = find(text)
    assert found, rel
    clean = redact(text, rel)
    assert cred not in clean
    assert clean.count("\n") == text.count("\n")  # lines replaced, never added or removed
    assert MARKER in clean and _word(rel) in clean


@pytest.mark.parametrize("rel, _template, cred", CORPUS, ids=[r for r, _, _ in CORPUS])
def test_no_arm_finds_a_credential_by_its_exact_text(corpus_engine, rel, _template, cred):
    engine, stats = corpus_engine
    assert not [s for s in stats.skipped if s[0] == rel]  # the file is indexed, only redacted
    for arm in ARMS:
        result = engine.run_arm(arm, cred, depth=50)
        assert result.ok, (arm, result.skipped, result.error)
        for hit in result.hits:
            assert cred not in _chunk_text(engine, hit), (arm, hit.path)
    # The ordinary word of the same file still finds it.
    word = _word(rel)
    for arm in ("bm25", "fts5"):
        assert rel in {h.path for h in engine.run_arm(arm, word, depth=10).hits}, (arm, word)


def test_the_index_holds_no_credential_anywhere(corpus_engine):
    engine, stats = corpus_engine
    conn = connect(engine.directory / "index.sqlite", readonly=True)
    try:
        # The stored text compressed (pack_text) would hide a credential from a plain search.
        stored = "\n".join(
            " ".join((*fields, unpack_text(text)))
            for *fields, text in conn.execute("SELECT path, context, symbol, text FROM chunks")
        )
        vocab = {row[0] for row in conn.execute("SELECT token FROM vocab")}
    finally:
        conn.close()
    for rel, _t, cred in CORPUS:
        assert cred not in stored, rel
        assert all(len(part) < 12 or part.lower() not in vocab for part in _alnum_runs(cred)), rel
    assert {p for p, _lines in stats.redacted} == {rel for rel, _t, _c in CORPUS}


def test_exports_and_span_hashes_hold_no_credential(corpus_engine):
    engine, _stats = corpus_engine
    for rel, template, cred in CORPUS:
        result = engine.search(_word(rel), top_k=5, arms=["bm25", "fts5"])
        hits = [h for h in result.hits if h.path == rel]
        assert hits, rel
        data = envelope(
            query=_word(rel),
            mode="all",
            retrievers=result.answered,
            skipped=[],
            weights={},
            k=60,
            hits=hits,
            root=engine.root,
            with_hashes=True,
        )
        assert cred not in json.dumps(data)
        for hit in hits:
            span = span_text(engine.root, hit.path, hit.start_line, hit.end_line)
            assert cred not in span and MARKER in span
            raw = "\n".join(template.format(c=cred).split("\n")[hit.start_line - 1 : hit.end_line])
            assert span_sha256(engine.root, hit) == hashlib.sha256(span.encode()).hexdigest()
            assert span_sha256(engine.root, hit) != hashlib.sha256(raw.encode()).hexdigest()


def test_the_preview_reads_redacted_text(corpus_engine):
    from ranklens.tui.app import RanklensApp

    engine, _stats = corpus_engine
    app = RanklensApp(engine)
    for rel, _template, cred in CORPUS:
        text = app.read_file(rel)
        assert text is not None and cred not in text and MARKER in text, rel


@pytest.mark.slow  # ~4.5 s: the CLI run twice for each of five credentials
def test_query_output_holds_no_credential(corpus_engine):
    engine, _stats = corpus_engine
    for _rel, _t, cred in CORPUS[:5]:
        out = run("query", cred, "--root", str(engine.root), "--json")
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["query"] == cred  # what was asked is echoed; nothing found holds it
        assert cred not in json.dumps(data["results"])
        text = run("query", cred, "--root", str(engine.root))
        assert cred not in text.stdout and cred not in text.stderr


def _chunk_text(engine: Engine, hit) -> str:
    conn = connect(engine.directory / "index.sqlite", readonly=True)
    try:
        rows = conn.execute(
            "SELECT context, symbol, text FROM chunks WHERE path = ? AND start_line <= ? AND end_line >= ?",
            (hit.path, hit.end_line, hit.start_line),
        ).fetchall()
    finally:
        conn.close()
    return "\n".join(" ".join((*r[:-1], unpack_text(r[-1]))) for r in rows)


def _alnum_runs(text: str) -> list[str]:
    return "".join(c if c.isalnum() else " " for c in text).split()


# --- the detector on its own ---------------------------------------------------------


def test_code_that_talks_about_credentials_is_left_alone():
    code = (
        "def check_password(password: str) -> bool:\n"
        "    token = request.headers['Authorization']\n"
        "    api_key = os.environ['API_KEY']\n"
        "    secret_key = settings.SECRET_KEY\n"
        "    url = 'https://example.com/path?x=1'\n"
        "    aws_region = 'eu-west-1'\n"
        "    sha = '3f786850e387550fdab836ed7e6dc881de23001b'\n"
        "    PEM_HEADER = '-----" + "BEGIN RSA PRIVATE KEY-----'\n"
        "    PEM_FOOTER = '-----" + "END RSA PRIVATE KEY-----'\n"
    )
    assert find(code) == []
    assert redact(code, "auth.py") is code


def test_a_private_key_block_counts_whatever_its_body_length():
    for body in ("", "a", "MIIBOg", _pick(B64, 40) + "\n" + _pick(B64, 12)):
        text = (
            "x = 1\n"
            + BEGIN
            + "EC PRIVATE KEY-----\n"
            + (body + "\n" if body else "")
            + END
            + "EC PRIVATE KEY-----\ny = 2\n"
        )
        lines = redact(text, "notes.txt").split("\n")
        assert lines[0] == "x = 1" and lines[-2:] == ["y = 2", ""]
        assert lines[1:-2] == [MARKER] * (len(text.split("\n")) - 3)


def test_redaction_keeps_indentation_and_line_count():
    token = "gh" + "p_" + _pick(ALNUM, 36)
    text = f"def f():\n    t = '{token}'\n    return t\n"
    assert redact(text, "a.py") == f"def f():\n    {MARKER}\n    return t\n"


def test_a_secret_file_by_name_is_redacted_whole():
    assert redact("A=1\nB=2\n", "conf/.env") == f"{MARKER}\n{MARKER}\n{MARKER}"
    assert is_secret_name("securityfs-secrets-coco") is None
    assert is_secret_name("secrets.yaml") == "secret data file name"


def test_the_anchor_scans_cover_every_plugin_match():
    """For each corpus line a plugin flags, some anchor scan picked the line first (the scans
    decide which lines the plugins ever see)."""
    for rel, template, cred in CORPUS:
        for line in template.format(c=cred).split("\n"):
            groups = {m.lastgroup for rx in secrets._SCAN_RES for m in rx.finditer(line)}
            low = line.lower()
            groups |= {g for needle, g in secrets._LOWER_SCANS.items() if needle in low}
            everything = secrets._line_findings(line, list(secrets._GROUPS))
            if everything is not None:
                assert secrets._line_findings(line, sorted(groups)) is not None, (rel, line)


def test_placeholder_passwords_in_urls_are_left_alone():
    placeholders = [
        "e.g. `pass` in `https://user:pass@host:port/path?query#fragment`",
        '#   DATABASE_URL="postgres://myuser:mypass@localhost/somedatabase"',
        "          DATABASE_URL: postgres://postgres:postgres@localhost:5432",
        "POWER_CYCLE = wget --auth-no-challenge 'http://admin:admin\\@power/outlet?5=CCL'",
        "url = f'postgres://{user}:${DB_PASSWORD}@db/app'",
        "amqp://guest:<password>@rabbit:5672/",
    ]
    for line in placeholders:
        assert find(line) == [], line
    real = "DATABASE_URL=postgres://app:" + "Tr0ub4dor" + "x9Q@db.internal:5432/app"
    assert [f.kind for f in find(real)] == ["Basic Auth Credentials"]
