"""The one secret scanner: a corpus of each pattern and its near miss, and one verdict everywhere.

A text the Safety gate passes must snapshot, and a text it refuses must not: both ask
``engine.core.secret_scan``. Key-shaped strings are assembled at run time so the repository holds
none
verbatim.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.core.errors import SkillsmithError
from engine.core.safety import scan
from engine.core.secret_scan import SECRET_RULES, VAULT_RULE, find_secrets, is_secret_value
from engine.core.snapshots import create_snapshot
from engine.core.store import SkillStore
from engine.core.vault import redact, write_secret
from engine.core.workspace import Workspace
from engine.evaluation.gates.candidate import TaskOutcome, run_candidate_gates
from tests.candidate_helpers import add_skill, skill_text

_R = "a8Kd92jdLQm3ZpX7vB1nR4tY6uW0eS5cH2gF"
ANTHROPIC = "sk-" + "ant-api03-" + _R
OPENAI = "sk-" + "proj-" + _R
STRIPE = "sk_" + "live_" + _R[:24]
GOOGLE = "AIza" + "Sy" + _R[:33]
AWS_ID = "AKIA" + "Z7QW3RT5YU8IOP2M"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYz9Q2mLk4Tr"
GITHUB = "ghp_" + _R
SLACK = "xoxb-" + "1234567890-" + _R[:24]
HOOK = "https://hooks.slack.com/services/" + "T04BQ7XK2/" + "B05HZ3M9P/" + _R[:24]
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N"
HEADER = "-----BEGIN " + "PRIVATE KEY-----"
BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQC" + _R[:13]
VAULT_VALUE = "vault-" + "Q7m2Zx9w"

# rule id -> (positives, near misses); a positive is caught with its first hit on line 1.
CORPUS: dict[str, tuple[list[str], list[str]]] = {
    "secret.anthropic_key": (
        [f"export ANTHROPIC_API_KEY={ANTHROPIC}"],
        ["sk-ant-api03-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX is the placeholder"],
    ),
    "secret.openai_key": (
        [f'client = OpenAI(api_key="{OPENAI}")'],
        ["pip install sk-learn-extras-for-everyone"],
    ),
    "secret.stripe_key": (
        [f"stripe.api_key = '{STRIPE}'", f"STRIPE={STRIPE}"],
        ["sk_live_xxxxxxxxxxxxxxxxxxxxxxxx", "use an sk_live_ key only in production"],
    ),
    "secret.google_api_key": (
        [f"GOOGLE_MAPS={GOOGLE}", f"?key={GOOGLE}&q=x"],
        ["keys look like AIza followed by 35 characters", "AIza" + "Sy" + "X" * 33],
    ),
    "secret.aws_access_key": (
        [f"aws_access_key_id = {AWS_ID}", f"aws_key_id_{AWS_ID}"],
        ["AKIA1234 is too short", "the documented AKIA" + "IOSFODNN7EXAMPLE"],
    ),
    "secret.aws_secret_key": (
        [f"aws_secret_access_key = {AWS_SECRET}"],
        ["aws_secret_access_key = $AWS_SECRET_ACCESS_KEY"],
    ),
    "secret.github_token": ([f"GITHUB_TOKEN: {GITHUB}"], ["use a ghp_ token from the vault"]),
    "secret.slack_token": ([f"SLACK_BOT={SLACK}"], ["xoxb-XXXXXXXXXXXXXXXX"]),
    "secret.slack_webhook": (
        [f"curl -X POST {HOOK}"],
        [
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "post to https://hooks.slack.com/services/... (your webhook)",
        ],
    ),
    "secret.bearer_token": (
        [f'-H "Authorization: Bearer {_R[:32]}"'],
        ['-H "Authorization: Bearer token123"', "Authorization: Bearer $API_TOKEN"],
    ),
    "secret.url_credentials": (
        ["git clone https://deploy:" + "Xk9fP2qLm7w@git.example.com/repo.git"],
        [
            "git clone https://user:${GIT_TOKEN}@github.com/org/repo",
            "postgres://user:password@localhost/db",
            "see https://user:pass@host for the form",
        ],
    ),
    "secret.private_key": (
        [f"{HEADER}\n{BODY}", BODY, f'"private_key": "{HEADER}\\n{BODY}\\n"'],
        [
            f"a key starts with {HEADER} and ends with its END line",
            f"{HEADER}\n...\n-----END PRIVATE KEY-----",
            "dGhpcyBpcyBub3QgYSBrZXkgYXQgYWxsLCBqdXN0IHNvbWUgcHJvc2UgdGV4dA==",
        ],
    ),
    "secret.jwt": ([f"token is {JWT}"], ["a JWT looks like eyJ..."]),
    "secret.assignment": (
        [
            'password = "hunter22"',
            "db_token: 9f8e7d6c5b4a",
            "mysql --password=Tr0ub4dor88 -u app",  # not a placeholder word: a real one
        ],
        [
            'export VERCEL_TOKEN="vca_abc123"',
            "token: ${GITHUB_TOKEN}",
            'password = os.environ["X"]',
            # an example in a command line (a pdf skill's reference), and the inline allowlist
            "qpdf --password=secret123 --decrypt locked.pdf unlocked.pdf",
            "7z x backup.7z --password demo1",
            'db_password = "hunter22"  # skillsmith: allow-secret',
            "api_key: 9f8e7d6c5b4a  # pragma: allowlist secret",
        ],
    ),
}


def _rules(text: str, known: tuple[str, ...] = ()) -> list[tuple[str, int]]:
    return [(f.rule_id, f.line) for f in find_secrets(text.splitlines(), known)]


def test_every_secret_rule_is_in_the_corpus() -> None:
    assert set(CORPUS) == {rule.id for rule in SECRET_RULES}


@pytest.mark.parametrize(
    ("rule_id", "text"), [(r, t) for r, (pos, _) in CORPUS.items() for t in pos]
)
def test_positive_is_caught(rule_id: str, text: str) -> None:
    hits = [line for rule, line in _rules(text) if rule == rule_id]
    assert hits and hits[0] == 1, _rules(text)
    assert rule_id in {f.rule_id for f in scan(text)}  # the Safety scan says the same


@pytest.mark.parametrize(
    ("rule_id", "text"), [(r, t) for r, (_, neg) in CORPUS.items() for t in neg]
)
def test_near_miss_is_not_caught(rule_id: str, text: str) -> None:
    assert rule_id not in {rule for rule, _ in _rules(text)}


def test_the_allowlist_marker_never_lets_a_vault_value_through() -> None:
    line = f"deploy with {VAULT_VALUE}  # skillsmith: allow-secret"
    assert _rules(line, (VAULT_VALUE,)) == [(VAULT_RULE, 1)]


def test_vault_values_count_when_they_are_specific() -> None:
    assert _rules(f"x\nuse {VAULT_VALUE} here", (VAULT_VALUE,)) == [(VAULT_RULE, 2)]
    # a short value or a word would turn ordinary text into a "secret"
    assert _rules("VERDICT: vulnerable\nhunter2 ok", ("VERDICT", "hunter2", "PASSWORD")) == []
    assert not is_secret_value("correct-horse") and is_secret_value("c0rrect-h0rse")
    assert redact("the VERDICT line", ["VERDICT"]) == "the VERDICT line"


# -- one verdict: the gate and the snapshot agree ------------------------------------------------
@pytest.fixture
def ws(workspace: Workspace) -> Workspace:
    add_skill(workspace, "audit", skill_text("audit"))
    write_secret(workspace, "deploy_token", VAULT_VALUE)
    write_secret(workspace, "label", "VERDICT")
    return workspace


def _gate_and_snapshot(ws: Workspace, line: str) -> tuple[bool, str | None]:
    """Whether the Safety gate passes a step holding ``line``, and the snapshot's refusal."""
    store = SkillStore(ws, "audit")
    parent = store.ensure_adopted()
    text = skill_text("audit", steps=["List the files: `ls`.", *line.split("\n"), "Verdict."])
    decision = run_candidate_gates(
        ws,
        "audit",
        text,
        operation="update",
        parent_version=parent,
        outcome=TaskOutcome(status="success", score=1.0),
    )
    passed = next(r for r in decision.results if r.gate == "safety").verdict == "pass"
    store.publish(text, why="as a user would, by hand")
    try:
        create_snapshot(ws)
    except SkillsmithError as exc:
        return passed, str(exc)
    return passed, None


@pytest.mark.parametrize(
    "line",
    [t for _, neg in CORPUS.values() for t in neg] + ["Write VERDICT: yes or no."],
)
def test_what_the_gate_passes_can_be_snapshotted(ws: Workspace, line: str) -> None:
    passed, refusal = _gate_and_snapshot(ws, line)
    assert passed and refusal is None, refusal


@pytest.mark.parametrize(
    "line", [GOOGLE, STRIPE, HOOK, BODY, f"deploy with {VAULT_VALUE}", f"key id_{AWS_ID}"]
)
def test_what_the_gate_refuses_a_snapshot_refuses_by_file_and_line(
    ws: Workspace, line: str
) -> None:
    passed, refusal = _gate_and_snapshot(ws, f"Use `{line}`.")
    assert not passed
    assert refusal is not None and "\n" not in refusal
    assert "skills/audit/SKILL.md:" in refusal and "holds a secret" in refusal
    assert "move the value to vault/" in refusal
    assert line not in refusal and VAULT_VALUE not in refusal


# -- what is published can always be snapshotted -------------------------------------------------
SECRET_LINES = [GOOGLE, STRIPE, HOOK, BODY, f"deploy with {VAULT_VALUE}", f"key id_{AWS_ID}"]


def _refused(ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert main([*argv, "-w", str(ws.root)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("line", SECRET_LINES)
def test_publish_refuses_a_secret_so_the_skill_still_snapshots(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    store = SkillStore(ws, "audit")
    store.ensure_adopted()
    new = tmp_path / "new.md"
    new.write_text(skill_text("audit", steps=["List the files: `ls`.", f"Use `{line}`.", "Done."]))

    err = _refused(ws, capsys, ["publish", "audit", str(new), "--why", "w"])

    assert f"{new}:" in err and "secret" in err and line not in err, err
    assert [v.version for v in store.versions()] == ["v0"]
    create_snapshot(ws)  # the published skill snapshots, as it always must


@pytest.mark.parametrize("line", [GOOGLE, f"deploy with {VAULT_VALUE}"])
def test_a_secret_in_a_published_folder_file_is_refused_too(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    SkillStore(ws, "audit").ensure_adopted()
    folder = tmp_path / "audit"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_text("audit"))
    (folder / "references" / "notes.md").write_text(f"Notes.\nUse {line} to deploy.\n")

    err = _refused(ws, capsys, ["publish", "audit", str(folder), "--why", "w"])

    assert f"{folder / 'references' / 'notes.md'}:2: holds a secret" in err, err
    assert "then publish again" in err and line not in err
    assert [v.version for v in SkillStore(ws, "audit").versions()] == ["v0"]
    create_snapshot(ws)
