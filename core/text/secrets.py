"""Credentials: which files are secrets by name, and which lines of a text hold one.

Every reader of a file's text for an answer goes through :func:`redact` (the indexer's
:func:`core.discovery.read_text`, the terminal UI's preview, the handoff export's span
hashes): a line that holds a credential is replaced by its indentation and
:data:`MARKER`, so the line count, and with it every line number and span, stays valid
while the rest of the file stays searchable.

What counts as a credential
---------------------------
* A private-key block: ``-----BEGIN … PRIVATE KEY-----`` (PEM, OpenSSH, PGP, and the SSH2
  ``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``) through its END marker, whatever the
  length of its body, which may be split across string literals (``"…\\n" +``) or written
  with escaped newlines (a JSON service-account file); a BEGIN marker without an END
  counts when a base64 body of at least 40 characters follows it. A PuTTY key file
  (``PuTTY-User-Key-File-N:`` … ``Private-MAC:``) likewise. Code that only *mentions* the
  markers (a PEM parser's constants) is not a block: the text between them is not a
  base64 body.
* A token in a well-known format, found by the regex plugins of detect-secrets (Yelp; AWS
  keys, GitHub, GitLab, Slack tokens and webhooks, Stripe, npm, PyPI, SendGrid, OpenAI,
  Twilio, Mailchimp, Square, Telegram, Discord, JWTs, Azure storage keys, IBM Cloud,
  Cloudant, SoftLayer, Artifactory, passwords in URLs) plus a few formats it lacks
  (:data:`EXTRA_PATTERNS`); its password-in-URL plugin skips placeholders
  (:class:`_UrlPassword`). Its keyword and entropy plugins are left out: on the Linux
  sources and the 21 benchmark repositories they cost ~0.5 and ~0.07 s per MB, and what
  they flagged was integrity checksums, SHA-1 test vectors, hex digests and example
  passwords (``password='password1'``), not credentials.

detect-secrets runs its plugins on every line, ~0.3 s per MB of code; here one cheap
scan per group of formats (:data:`_SCANS`, each a superset of what its plugins can match,
each starting with a literal) picks the candidate lines first, and only the plugins whose
anchor matched run on them.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "EXTRA_PATTERNS",
    "MARKER",
    "NAME_RULES_VERSION",
    "RULES_VERSION",
    "Finding",
    "find",
    "is_secret_name",
    "load_detectors",
    "redact",
]

#: What a redacted line holds (after the line's own indentation).
MARKER = "[ranklens: credential redacted]"

#: Bumped whenever what is redacted or skipped as a secret changes: an index built under
#: other rules is rebuilt (its stored text may hold what these rules now remove).
RULES_VERSION = 1
#: Bumped when a name rule skips fewer files (nothing stored needs removing, so no rebuild):
#: the next pass lists the tree again (core.index.freshness.snapshot_key) and indexes what is now
#: kept. 2: the word rule judges data and key files only, not documentation pages.
NAME_RULES_VERSION = 2


# --- secret files, by name -----------------------------------------------------------

_SECRET_EXACT = frozenset(
    {
        ".env",
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".htpasswd",
        # SSH private keys (the matching *.pub files are public and stay indexed)
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    }
)
# Key stores and key files. ``.pem`` is not here: a certificate is public, and a key
# inside a .pem is a private-key block, which the content rules remove (a file holding
# nothing else is skipped as "private key").
_SECRET_EXTENSIONS = frozenset({".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx"})
# Committed templates of .env files document the variables and hold no real values.
_ENV_TEMPLATES = frozenset({".env.example", ".env.sample", ".env.template"})
_SECRET_WORDS = frozenset({"secret", "secrets", "credential", "credentials"})
_WORD_SPLIT = re.compile(r"[-_.\s]+")
# The word rule judges data and key files only: ``secrets.yaml``, ``client_secret.json``,
# ``credentials`` and ``secret.txt`` hold values, while ``credentials.py``, ``secret_manager.go``,
# ``docs/secrets.md`` or ``prefect_aws-credentials.mdx`` are code and documentation *about*
# credentials, which is exactly what a code search user looks for (a credential inside one is
# redacted line by line). ``.txt`` counts as data: plain text is where tokens get pasted. ""
# is a name without an extension (``credentials``, ``aws_credentials``).
_DATA_EXTENSIONS = frozenset(
    {
        "",
        ".json",
        ".jsonc",
        ".json5",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".config",
        ".env",
        ".properties",
        ".xml",
        ".plist",
        ".txt",
        ".csv",
        ".tsv",
        ".dat",
        ".data",
        ".db",
        ".sqlite",
        ".bin",
        ".enc",
        ".gpg",
        ".pgp",
        ".asc",
        ".age",
        ".pem",
        ".der",
        ".crt",
        ".cer",
        ".tfvars",
        ".tfstate",
        ".kdb",
        ".pkl",
        ".pickle",
        ".bak",
        ".old",
        ".orig",
        ".backup",
        ".secret",
        ".secrets",
        ".cred",
        ".creds",
        ".credentials",
    }
)


def is_secret_name(name: str) -> str | None:
    """The rule by which a file named ``name`` (a basename) is a secret, or None.

    Parameters
    ----------
    name : str
        The file's basename (case is ignored).

    Returns
    -------
    str or None
        ``"secret file name"`` (``.env``, ``.netrc``, SSH keys …), ``"key store
        extension"`` (``.key``, ``.p12``, ``.jks`` …), ``".env variant"`` (``.env.local``;
        not the ``.example``/``.sample``/``.template`` ones) or ``"secret data file name"``
        (a data, key or extension-less file, :data:`_DATA_EXTENSIONS`, whose name starts or
        ends with the word secret(s) or credential(s), or starts with ``client_secret``:
        ``secrets.yaml``, ``app-secrets.env``, ``credentials.json``); None for any other name.
        A name with the word in the middle (``securityfs-secrets-coco``, kernel
        documentation) or any other extension (source; documentation pages such as
        ``prefect_aws-credentials.mdx``) is not a secret; the content rules still apply.
    """
    lower = name.lower()
    stem, ext = os.path.splitext(lower)
    if lower in _SECRET_EXACT:
        return "secret file name"
    if ext in _SECRET_EXTENSIONS:
        return "key store extension"
    if lower.startswith(".env.") and lower not in _ENV_TEMPLATES:
        return ".env variant"
    if ext not in _DATA_EXTENSIONS or not any(w in lower for w in ("secret", "credential")):
        return None
    words = [w for w in _WORD_SPLIT.split(stem) if w]
    if words and (words[0] in _SECRET_WORDS or words[-1] in _SECRET_WORDS or lower.startswith("client_secret")):
        return "secret data file name"
    return None


# --- private-key blocks ----------------------------------------------------------------

# Between the markers: whitespace, escaped newlines (``\n`` in JSON) and string-literal
# glue (quotes, ``+``, commas) separate optional PEM/PGP header lines (``Proc-Type:``,
# ``DEK-Info:``, ``Version:``) and base64 runs. Possessive quantifiers: a long run of
# glue or base64 that leads nowhere fails at once instead of backtracking.
_GAP = r"""(?:\s|\\+[rn]|["'+,])"""
_HEADER = r"[A-Za-z][A-Za-z0-9-]*+:(?:(?!-----)[^\r\n\\])*+"
_B64 = r"[A-Za-z0-9+/]++={0,2}+"
_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_BEGIN = rf"-----BEGIN {_LABEL}-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
_END = rf"-----END {_LABEL}-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----"
_BODY = rf"(?:{_GAP}++{_HEADER})*+(?:{_GAP}*+{_B64})*+{_GAP}*+"
_KEY_BEGIN = re.compile(_BEGIN)
_KEY_BLOCK = re.compile(rf"(?:{_BEGIN})(?P<body>{_BODY})(?P<end>{_END})?")
_LONG_B64 = re.compile(r"[A-Za-z0-9+/]{40}")
_PUTTY = re.compile(r"^PuTTY-User-Key-File-[0-9]+: ", re.MULTILINE)
_PUTTY_END = re.compile(r"^Private-MAC: .*$", re.MULTILINE)
_KEY_HINTS = ("PRIVATE KEY", "PuTTY-User-Key-File-")


def _key_blocks(text: str) -> Iterable[tuple[int, int]]:
    """Character ranges ``[start, end)`` of the private-key blocks in ``text``."""
    if "PRIVATE KEY" in text:
        pos = 0
        while True:
            m = _KEY_BEGIN.search(text, pos)
            if m is None:
                break
            block = _KEY_BLOCK.match(text, m.start())
            if block is not None and (block.group("end") or _LONG_B64.search(block.group("body"))):
                yield m.start(), block.end()
                pos = block.end()
            else:
                pos = m.end()
    if "PuTTY-User-Key-File-" in text:
        for m in _PUTTY.finditer(text):
            end = _PUTTY_END.search(text, m.end())
            yield m.start(), end.end() if end is not None else len(text)


# --- tokens in well-known formats ------------------------------------------------------


class _Pattern:
    """A detector of our own with the one method of detect-secrets' plugins used here."""

    def __init__(self, secret_type: str, pattern: str, flags: int = 0) -> None:
        self.secret_type = secret_type
        self.regex = re.compile(pattern, flags)

    def analyze_string(self, string: str) -> Iterable[str]:
        for m in self.regex.finditer(string):
            yield m.group(m.lastindex or 0)


#: Well-known formats detect-secrets 1.5 misses: an AWS secret access key assigned without
#: quotes (``export AWS_SECRET_ACCESS_KEY=…`` in a shell script), GitHub's fine-grained
#: tokens, Google API keys, OpenAI project/service keys (no ``T3BlbkFJ`` inside any more)
#: and Anthropic keys; and Artifactory's API tokens alone.
EXTRA_PATTERNS: tuple[_Pattern, ...] = (
    # 40 characters of base64 assigned to an AWS-ish or secret-key-ish name, quoted or not
    # (Terraform's ``secret_key = "…"`` in a ``provider "aws"`` block, CloudFormation's
    # ``"SecretAccessKey": "…"``).
    _Pattern(
        "AWS Secret Access Key",
        r"(?:aws.{0,20}?(?:secret|key)|secret_?(?:access_?)?key).{0,20}?[=:]\s*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        re.IGNORECASE,
    ),
    # Artifactory's API tokens; its plugin's other pattern ("AP", a hex digit and 8 more
    # letters or digits) matched 7 macro names in the Linux sources and no password.
    _Pattern("Artifactory Token", r'(?:\s|=|:|"|^)(AKC[a-zA-Z0-9]{10,})(?:\s|"|$)'),
    _Pattern("GitHub Fine-Grained Token", r"github_pat_[A-Za-z0-9_]{22,}"),
    _Pattern("Google API Key", r"AIza[0-9A-Za-z_-]{35}"),
    _Pattern("OpenAI or Anthropic Key", r"sk-(?:proj|svcacct|admin|ant-(?:api|admin)[0-9]{2})-[A-Za-z0-9_-]{20,}"),
)


class _UrlPassword:
    """detect-secrets' BasicAuthDetector (a password in ``scheme://user:password@host``) minus
    the placeholders documentation and templates are full of: a password equal to the user
    name (``postgres:postgres``, ``admin:admin``), templated (``${DB_PASS}``, ``<password>``,
    ``{pw}``, ``%s``) or a word for password (``pass``, ``mypass``, ``secret``, ``changeme``).
    On 21 repositories of the benchmark set these were all 23 of its lines, and 3 of the
    Linux sources' (``http://admin:admin@power/…``)."""

    secret_type = "Basic Auth Credentials"
    _USER = re.compile(r"://([^:/?#\[\]@\s]+):")
    _PLACEHOLDER = re.compile(
        r"(?:my|your|db|cache|the|some|user|app)?(?:pass|passwd|password|pwd|pw|secret|changeme|example|xxx+|dummy)[0-9]?",
    )

    def __init__(self, plugin) -> None:
        self.plugin = plugin

    def analyze_string(self, string: str) -> Iterable[str]:
        users = {u.lower() for u in self._USER.findall(string)}
        for value in self.plugin.analyze_string(string):
            bare = re.sub(r"[^A-Za-z0-9]", "", value).lower()
            templated = any(c in value for c in "${}<>%*") or value.startswith(":")
            if not bare or templated or bare in users or self._PLACEHOLDER.fullmatch(bare):
                continue
            yield value


# Anchors: a line with none of them cannot hold a finding. Each named group is a regex
# that every match of its detectors contains; the scans are grouped by their first
# character, so each starts with a literal and runs at ~0.6 ms per MB (one regex of all the
# alternatives ran at ~400 ms per MB: Python's re tries every branch at every position).
_VALUE = r"""["']?\]? *(?:=|:|:=|=>| +|::) *["']?[A-Za-z0-9_\-]{24}"""
_SCANS: tuple[str, ...] = (
    # The alternatives of one scan sit in a lookahead after its first character: a match
    # consumes only that character, so one alternative's match never hides another's
    # (``password: pypi-AgE…`` is both an assignment and a PyPI token).
    r"A(?=(?P<aws_id>KIA|SIA|BIA|CCA|3T[A-Z0-9])|(?P<artifactory>KC)|(?P<google>Iza)|(?P<azure>ccountKey=)"
    r"|(?P<twilio>C[a-z0-9]{32}))",
    r"S(?=(?P<twilio_sk>K[a-z0-9]{32})|(?P<sendgrid>G\.))",
    r"s(?=(?P<openai_new>k-(?:proj|svcacct|admin|ant)-)|(?P<square>q0csp-))",
    r"(?P<stripe>k_live_)",
    r"g(?=(?P<github>h[pousr]_|ithub_pat_)|(?P<gitlab>l(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-))",
    r"(?P<gitlab_runner>GR1348941)",
    r"(?P<jwt>eyJ)",
    r"(?P<openai>T3BlbkFJ)",
    # detect-secrets' assignment regexes (Cloudant, IBM Cloud IAM and COS, SoftLayer):
    # a keyword, an optional quote or bracket, an assignment, an optional quote, then a
    # value of at least 24 of these characters.
    r"p(?=(?P<pypi>ypi-AgE)|(?P<assign_p>(?:wd|w|assword|ass)" + _VALUE + "))",
    r"k(?=(?P<assign_k>ey" + _VALUE + "))",
    r"t(?=(?P<assign_t>oken" + _VALUE + "))",
    # Passwords in URLs and the URL forms of the Cloudant, SoftLayer and Slack plugins.
    r":(?=(?P<url>//)|(?P<telegram>[0-9A-Za-z_-]{35}))",
    r"\.(?=(?P<discord>[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}))",
    r"(?P<mailchimp>-us[0-9])",
    r"(?P<npm>_authToken=)",
)
_SCAN_RES = tuple(re.compile(rx) for rx in _SCANS)
# The case-insensitive ones, looked for in the text with ASCII letters lowercased.
_LOWER_SCANS: dict[str, str] = {"aws": "aws", "secret": "secret_key", "xox": "slack"}
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

_ASSIGN = (
    "cloudant.CloudantDetector",
    "ibm_cloud_iam.IbmCloudIamDetector",
    "ibm_cos_hmac.IbmCosHmacDetector",
    "softlayer.SoftlayerDetector",
)
#: Anchor group -> its detectors: ``module.Class`` of ``detect_secrets.plugins``, or ``+``
#: and the secret type of one of :data:`EXTRA_PATTERNS`.
_GROUPS: dict[str, tuple[str, ...]] = {
    "aws_id": ("aws.AWSKeyDetector",),
    "aws": ("aws.AWSKeyDetector", "+AWS Secret Access Key"),
    "secret_key": ("+AWS Secret Access Key",),
    "artifactory": ("+Artifactory Token",),
    "google": ("+Google API Key",),
    "azure": ("azure_storage_key.AzureStorageKeyDetector",),
    "twilio": ("twilio.TwilioKeyDetector",),
    "twilio_sk": ("twilio.TwilioKeyDetector",),
    "sendgrid": ("sendgrid.SendGridDetector",),
    "openai_new": ("+OpenAI or Anthropic Key",),
    "square": ("square_oauth.SquareOAuthDetector",),
    "stripe": ("stripe.StripeDetector",),
    "github": ("github_token.GitHubTokenDetector", "+GitHub Fine-Grained Token"),
    "gitlab": ("gitlab_token.GitLabTokenDetector",),
    "gitlab_runner": ("gitlab_token.GitLabTokenDetector",),
    "jwt": ("jwt.JwtTokenDetector",),
    "openai": ("openai.OpenAIDetector",),
    "pypi": ("pypi_token.PypiTokenDetector",),
    "assign_p": _ASSIGN,
    "assign_k": _ASSIGN,
    "assign_t": _ASSIGN,
    "url": (
        "basic_auth.BasicAuthDetector",
        "cloudant.CloudantDetector",
        "softlayer.SoftlayerDetector",
        "slack.SlackDetector",
    ),
    "telegram": ("telegram_token.TelegramBotTokenDetector",),
    "discord": ("discord.DiscordBotTokenDetector",),
    "mailchimp": ("mailchimp.MailchimpDetector",),
    "npm": ("npm.NpmDetector",),
    "slack": ("slack.SlackDetector",),
}


@functools.lru_cache(maxsize=1)
def _detectors() -> dict[str, tuple]:
    """Anchor group -> its detectors (detect-secrets is imported on first need)."""
    import importlib

    extra = {p.secret_type: p for p in EXTRA_PATTERNS}
    made: dict[str, object] = {}
    out: dict[str, tuple] = {}
    for group, names in _GROUPS.items():
        for name in names:
            if name not in made:
                if name.startswith("+"):
                    made[name] = extra[name[1:]]
                else:
                    module, cls = name.rsplit(".", 1)
                    made[name] = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)()
                    if cls == "BasicAuthDetector":
                        made[name] = _UrlPassword(made[name])
        out[group] = tuple(made[name] for name in names)
    return out


def load_detectors() -> None:
    """Import detect-secrets' plugins now (~0.15 s, once per process) instead of on the first
    candidate line: a UI calls it from a worker thread so its preview never waits for it."""
    _detectors()


def _line_findings(line: str, groups: Iterable[str]) -> str | None:
    """The type of the first credential found on ``line`` by the detectors of ``groups``."""
    detectors = _detectors()
    seen: set[int] = set()
    for group in groups:
        for detector in detectors[group]:
            if id(detector) in seen:
                continue
            seen.add(id(detector))
            for value in detector.analyze_string(line):
                if value:
                    return detector.secret_type
    return None


# --- the API -------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """Lines ``start_line..end_line`` (1-based, inclusive) hold a credential of ``kind``."""

    start_line: int
    end_line: int
    kind: str


def find(text: str) -> list[Finding]:
    """The credentials in ``text``, in line order (overlapping findings are kept apart).

    Parameters
    ----------
    text : str
        A file's text, lines separated by ``"\\n"``.

    Returns
    -------
    list of Finding
        Private-key blocks (kind ``"Private Key"``) and lines holding a token in a
        well-known format (the detecting plugin's secret type, e.g. ``"AWS Access Key"``).
    """
    starts: list[int] | None = None

    def line_of(offset: int) -> int:
        nonlocal starts
        if starts is None:
            starts = [0] + [m.end() for m in re.finditer("\n", text)]
        return bisect.bisect_right(starts, offset)

    findings: list[Finding] = []
    if any(h in text for h in _KEY_HINTS):
        for start, end in _key_blocks(text):
            findings.append(Finding(line_of(start), line_of(max(start, end - 1)), "Private Key"))
    candidates: dict[int, set[str]] = {}
    for rx in _SCAN_RES:
        for m in rx.finditer(text):
            candidates.setdefault(text.rfind("\n", 0, m.start()) + 1, set()).add(m.lastgroup)
    lowered = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)  # same offsets
    for needle, group in _LOWER_SCANS.items():
        at = lowered.find(needle)
        while at >= 0:
            candidates.setdefault(text.rfind("\n", 0, at) + 1, set()).add(group)
            at = lowered.find(needle, at + len(needle))
    for line_start in sorted(candidates):
        line_end = text.find("\n", line_start)
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        kind = _line_findings(line, sorted(candidates[line_start]))
        if kind is not None:
            number = line_of(line_start)
            findings.append(Finding(number, number, kind))
    findings.sort(key=lambda f: (f.start_line, f.end_line))
    return findings


def _redact_lines(text: str, lines: Iterable[int]) -> str:
    """``text`` with each of ``lines`` (1-based) replaced by its indentation and MARKER."""
    wanted = set(lines)
    if not wanted:
        return text
    out = text.split("\n")
    for number in wanted:
        if 1 <= number <= len(out):
            line = out[number - 1]
            indent = line[: len(line) - len(line.lstrip())]
            out[number - 1] = indent + MARKER
    return "\n".join(out)


def redact(text: str, path: str) -> str:
    """``text`` of the file at ``path`` with every line holding a credential redacted.

    The one function every reader of file text for an answer goes through (index, preview,
    export, any server): each line of a private-key block or holding a token in a
    well-known format becomes its indentation followed by :data:`MARKER`. Lines are only
    replaced, never added or removed, so line numbers and spans stay valid.

    Parameters
    ----------
    text : str
        The file's text (lines separated by ``"\\n"``; a ``"\\r\\n"`` file keeps its
        ``"\\r"`` on unredacted lines).
    path : str
        The file's path (relative or absolute). A file that is a secret by its name
        (:func:`is_secret_name`: ``.env``, ``id_rsa`` …) has every line redacted: it is
        never indexed, and nothing should show it either.

    Returns
    -------
    str
        The redacted text (``text`` itself when nothing was found).
    """
    if is_secret_name(os.path.basename(path)):
        return _redact_lines(text, range(1, text.count("\n") + 2))
    findings = find(text)
    if not findings:
        return text
    return _redact_lines(text, (n for f in findings for n in range(f.start_line, f.end_line + 1)))
