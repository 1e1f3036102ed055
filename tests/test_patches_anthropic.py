"""The Anthropic proposer through the real SDK against the local Messages-API server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.core.config import LimitsConfig, ModelConfig
from engine.core.store import unified_diff
from engine.core.taboo import TabooEntry, diff_hash
from engine.core.vault import ANTHROPIC_KEY_NAME, write_secret
from engine.core.workspace import Workspace
from engine.evaluation.llm import AnthropicLLM
from engine.evaluation.patches import (
    AnthropicProposer,
    FilterReport,
    PatchError,
    ProposalContext,
    apply_patch,
    make_proposer,
    run_filters,
)
from engine.evaluation.patches.prompts import PROMPT_BUDGET, extract_diff
from engine.loops.evolve.convergence import Convergence
from tests.llm_server import MessagesServer, Reply, last_user_text, request_text
from tests.patch_helpers import DEMO_WORKSPACE, SKILL, diagnosis, patch_of

KEY = "sk-ant-api03-Pr0poserTESTkey0123456789abcdefXYZ"
GOOD = patch_of(
    "4. Confirm", '4. Flag pickle loads: `grep -nE "pickle\\.loads?\\(" *.py`\n5. Confirm'
)
CAUSE = {"rule_id": "progress_mismatch", "direction": "FN", "case_ids": ["deser-a", "deser-b"]}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def proposer(server: MessagesServer, **kwargs: Any) -> AnthropicProposer:
    cfg = ModelConfig(
        provider="anthropic", model="claude-sonnet-4-6", timeout_s=10.0, max_retries=0
    )
    return AnthropicProposer(AnthropicLLM(cfg, api_key=KEY, base_url=server.url), **kwargs)


def context(**kwargs: Any) -> ProposalContext:
    defaults: dict[str, Any] = {
        "skill_name": "audit",
        "skill_text": SKILL,
        "diagnosis": diagnosis(CAUSE),
        "gt_flags": [],
        "taboo_entries": [],
    }
    return ProposalContext(**{**defaults, **kwargs})


def sent_bytes(server: MessagesServer, index: int = 0) -> int:
    return len(request_text(server.message_requests[index].json).encode("utf-8"))


def test_a_valid_fenced_diff_becomes_an_accepted_proposal(messages_server: MessagesServer) -> None:
    messages_server.reply(f"Here is the patch:\n\n```diff\n{GOOD}```\n\nIt adds one step.")

    proposal = proposer(messages_server).propose(context())

    assert proposal.ok, proposal.reason
    assert proposal.diff == GOOD
    assert (proposal.rule_id, proposal.direction, proposal.attempts) == (
        "progress_mismatch",
        "FN",
        1,
    )
    assert proposal.skill_text == apply_patch(SKILL, GOOD)
    assert proposal.report is not None and proposal.report.passed
    assert proposal.model == "claude-sonnet-4-6"
    assert proposal.usage.output_tokens > 0 and proposal.usage.prompt_tokens > 0
    assert proposal.cost_usd is not None and proposal.cost_usd > 0
    assert proposal.taboo_rule == "progress_mismatch:FN"
    assert proposal.signature == f"progress_mismatch:FN:{diff_hash(GOOD)}"
    assert proposal.summary.startswith("FN + progress_mismatch: 4. Flag pickle loads")
    assert proposal.case_ids == ("deser-a", "deser-b")
    assert json.loads(json.dumps(proposal.to_dict()))["ok"] is True
    [request] = messages_server.message_requests
    text = request_text(request.json)
    assert "<SKILL.md>\n" + SKILL + "</SKILL.md>" in text
    assert "Patch this root cause: FN + progress_mismatch" in text
    assert "deser-a, deser-b" in text
    assert "ONLY a unified diff" in text


def test_a_bare_diff_with_miscounted_hunks_is_repaired(messages_server: MessagesServer) -> None:
    header = next(line for line in GOOD.splitlines() if line.startswith("@@"))
    messages_server.reply(GOOD.replace(header, "@@ -9,99 +9,3 @@"))

    proposal = proposer(messages_server).propose(context())

    assert proposal.ok, proposal.reason
    assert proposal.skill_text == apply_patch(SKILL, GOOD)


def test_prose_is_retried_with_the_error_then_no_valid_patch(
    messages_server: MessagesServer,
) -> None:
    messages_server.respond_with(lambda req: Reply(text="You should add a step about pickle."))

    proposal = proposer(messages_server, max_attempts=3).propose(context())

    assert not proposal.ok
    assert proposal.reason.startswith(
        "no valid patch after 3 attempts: the answer holds no unified diff"
    )
    assert proposal.attempts == 3
    requests = messages_server.message_requests
    assert len(requests) == 3
    second = requests[1].json["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert "could not be used: the answer holds no unified diff" in last_user_text(requests[1].json)
    assert proposal.usage.output_tokens > 0


def test_prose_then_a_valid_diff_is_accepted_on_the_second_attempt(
    messages_server: MessagesServer,
) -> None:
    messages_server.reply("I think step 4 should be stricter.", f"```diff\n{GOOD}```")

    proposal = proposer(messages_server).propose(context())

    assert proposal.ok and proposal.attempts == 2
    assert len(messages_server.message_requests) == 2


def test_a_diff_adding_a_heading_is_refused_by_structure(messages_server: MessagesServer) -> None:
    heading = patch_of(
        "## Pitfalls", "### Deserialisation\n\n- `yaml.safe_load(` — not a finding.\n\n## Pitfalls"
    )
    messages_server.respond_with(lambda req: Reply(text=heading))

    proposal = proposer(messages_server, max_attempts=2).propose(context())

    assert not proposal.ok
    assert proposal.report is not None
    assert [f.filter for f in proposal.report.fatal] == ["structure"]
    assert "adds a heading: '### Deserialisation'" in proposal.reason
    assert len(messages_server.message_requests) == 2
    assert "adds a heading" in last_user_text(messages_server.message_requests[1].json)


def test_an_81_line_diff_is_refused(messages_server: MessagesServer) -> None:
    lines = "".join(f"- `pattern{i}(` in a call — not a finding.\n" for i in range(80))
    big = patch_of("- `shlex.quote(` around every argument — not a finding.\n", lines)
    messages_server.respond_with(lambda req: Reply(text=big))

    proposal = proposer(messages_server, max_attempts=1).propose(context())

    assert not proposal.ok
    assert "81 changed lines (80 added, 1 removed); at most 80" in proposal.reason
    assert len(messages_server.message_requests) == 1


def test_a_taboo_repeat_is_refused_without_a_model_call(messages_server: MessagesServer) -> None:
    entry = TabooEntry(
        "progress_mismatch:FN", diff_hash(GOOD), "guardrail: 2 cases broke", "2026-05-27"
    )
    messages_server.respond_with(lambda req: Reply(text=GOOD))

    proposal = proposer(messages_server).propose(context(taboo_entries=[entry]))

    assert not proposal.ok
    assert proposal.attempts == 0
    assert proposal.reason.startswith("taboo: FN + progress_mismatch already has a rejected patch")
    assert len(messages_server.message_requests) == 0


def test_a_blocked_direction_moves_on_to_the_next_root_cause(
    messages_server: MessagesServer,
) -> None:
    entry = TabooEntry("progress_mismatch:FN", "0" * 16, "holdout drop", "2026-05-27")
    other = {"rule_id": "premature_conclusion", "direction": "FP", "case_ids": ["cmdi-a"]}
    messages_server.respond_with(lambda req: Reply(text=GOOD))

    proposal = proposer(messages_server).propose(
        context(diagnosis=diagnosis(CAUSE, other), taboo_entries=[entry])
    )

    assert proposal.ok
    assert (proposal.rule_id, proposal.direction) == ("premature_conclusion", "FP")
    [request] = messages_server.message_requests
    assert "Patch this root cause: FP + premature_conclusion" in request_text(request.json)


def test_the_exact_rejected_edit_is_sent_back_even_for_another_rule(
    messages_server: MessagesServer,
) -> None:
    entry = TabooEntry("manual", diff_hash(GOOD), "rejected by hand", "2026-05-27")
    fixed = patch_of(
        "4. Confirm", '4. Flag marshal loads: `grep -nE "marshal\\.loads?\\(" *.py`\n5. Confirm'
    )
    messages_server.reply(GOOD, fixed)

    proposal = proposer(messages_server).propose(context(taboo_entries=[entry]))

    assert proposal.ok and proposal.diff == fixed and proposal.attempts == 2
    assert "was rejected on 2026-05-27" in last_user_text(messages_server.message_requests[1].json)


def test_no_actionable_root_cause_asks_nothing(messages_server: MessagesServer) -> None:
    cause = {**CAUSE, "worth_patch": False}
    proposal = proposer(messages_server).propose(context(diagnosis=diagnosis(cause)))
    assert not proposal.ok and proposal.reason == "no root cause worth a patch"
    assert messages_server.message_requests == []


def test_the_prompt_stays_under_10kb_and_carries_no_secret(
    messages_server: MessagesServer, workspace: Workspace
) -> None:
    secret = "hunter2-Vault-Value-77"
    write_secret(workspace, "db_password", secret)
    skill = (DEMO_WORKSPACE / "skills" / "security-audit" / "SKILL.md").read_text()
    skill = skill.replace(
        "## Pitfalls\n", f"## Pitfalls\n\n- The DB password `{secret}` is fine.\n"
    )
    causes = [
        {
            "rule_id": f"rule_{i}",
            "direction": "FN",
            "case_ids": [f"case-{i}-{j}" for j in range(12)],
            "evidence": [
                f"case-{i}-0#0/skill: step {j} claimed, key {secret}, " + "x" * 200
                for j in range(9)
            ],
        }
        for i in range(30)
    ]
    flags = [
        {"case_id": f"case-{i}", "score": 0.8, "flagged": True, "reasons": ["y" * 300]}
        for i in range(40)
    ]
    taboo = [TabooEntry(f"rule_{i}:FP", f"{i:016x}", "z" * 200, "2026-05-27") for i in range(40)]
    messages_server.respond_with(lambda req: Reply(text="no diff"))

    proposer(messages_server, max_attempts=1).propose(
        context(
            skill_text=skill,
            diagnosis=diagnosis(*causes, failing=400),
            gt_flags=flags,
            taboo_entries=taboo,
        )
    )

    [request] = messages_server.message_requests
    text = request_text(request.json)
    assert len(text.encode("utf-8")) < PROMPT_BUDGET
    assert secret not in json.dumps(request.json)
    assert "[REDACTED]" in text
    assert "Patch this root cause: FN + rule_0" in text
    assert "do not bend SKILL.md to fit them" in text
    assert "Patches rejected before" in text


def test_make_proposer_reads_the_key_from_the_vault(
    messages_server: MessagesServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    ws = Workspace.init(tmp_path / "ws")
    write_secret(ws, ANTHROPIC_KEY_NAME, KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    messages_server.reply(GOOD)

    made = make_proposer("anthropic", ws)
    proposal = made.propose(context())

    assert made.kind == "anthropic" and proposal.ok
    assert messages_server.message_requests[0].has_credentials


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("@@ -1,1 +1,1 @@\n-a\n+b\n", "no '--- a/SKILL.md' / '+++ b/SKILL.md' header"),
        ("--- a/SKILL.md\n+++ b/SKILL.md\nno hunk here\n", "no '@@ -l,n +l,n @@' hunk"),
        ("--- a/SKILL.md\n+++ b/SKILL.md\n@@ nonsense @@\n+x\n", "malformed hunk header"),
    ],
)
def test_extraction_errors_name_what_is_missing(answer: str, error: str) -> None:
    with pytest.raises(PatchError, match=re.escape(error)):
        extract_diff(answer)


def test_extraction_keeps_blank_context_and_stops_at_trailing_prose() -> None:
    new = SKILL.replace("## Pitfalls\n\n", "## Pitfalls\n\n- `yaml.safe_load(` — not a finding.\n")
    diff = unified_diff(SKILL, new)
    stripped = "\n".join("" if line == " " else line for line in diff.splitlines())
    answer = stripped + "\nThis tells the agent about safe loaders.\n"

    got = extract_diff(answer)

    assert apply_patch(SKILL, got) == new


def test_limits_come_from_the_constructor(messages_server: MessagesServer) -> None:
    messages_server.respond_with(lambda req: Reply(text=GOOD))
    tight = proposer(messages_server, max_attempts=1, limits=LimitsConfig(max_patch_lines=1))
    proposal = tight.propose(context())
    assert not proposal.ok and "at most 1" in proposal.reason


def _big_skill() -> str:
    """A 74 KB SKILL.md of real-style text: the corpus's mcp-server-kit skill with every guide of
    the corpus folded in as appendices (again until it is the size of the largest public
    SKILL.md), cut at a line."""
    corpus = Path(__file__).parent / "data" / "corpus"
    parts = [(corpus / "mcp-server-kit" / "SKILL.md").read_text("utf-8")]
    guides = sorted(p for p in corpus.rglob("*.md") if p.name != "SKILL.md")
    text = ""
    while len(text.encode("utf-8")) <= 74 * 1024:
        parts += [
            f"\n## Appendix {len(parts)}: {p.stem}\n\n" + p.read_text("utf-8") for p in guides
        ]
        text = "".join(parts)
    lines = text.splitlines(keepends=True)
    text = ""
    for line in lines:
        if len((text + line).encode("utf-8")) > 74 * 1024:
            break
        text += line
    return text


EXCERPT = re.compile(r'<SKILL\.md lines="(\d+)-(\d+)">\n(.*?)</SKILL\.md>', re.DOTALL)
ADDED = "   Run `list_tools` first and keep its output in `tools.json`."


def _model_patching_the_excerpt(req: dict[str, Any]) -> Reply:
    """A model that only sees the excerpts: it patches the line the evidence names, quoting it
    from the excerpt and numbering the hunk from the excerpt's first line."""
    for first, _, body in EXCERPT.findall(last_user_text(req)):
        for offset, line in enumerate(body.split("\n")):
            if "**Explore the API**" in line:
                at = int(first) + offset
                return Reply(
                    text=f"--- a/SKILL.md\n+++ b/SKILL.md\n@@ -{at},1 +{at},2 @@\n"
                    f" {line}\n+{ADDED}\n"
                )
    return Reply(text="no excerpt holds the step")


def test_a_74_kb_skill_is_sent_in_part_under_10_kb(messages_server: MessagesServer) -> None:
    big = _big_skill()
    assert len(big.encode("utf-8")) > 70_000
    evidence = ["case-1#0/skill: step 2 claimed but no call ran `list_tools`"]
    cause = {**CAUSE, "evidence": evidence}
    messages_server.respond_with(_model_patching_the_excerpt)
    limit = Convergence().slim_limit(len(big.encode("utf-8")))  # adopted at this size

    proposal = proposer(messages_server, max_attempts=1).propose(
        context(
            skill_name="mcp-server-kit",
            skill_text=big,
            diagnosis=diagnosis(cause),
            slim_limit=limit,
        )
    )

    [request] = messages_server.message_requests
    assert request.body_bytes < 10_000, request.body_bytes
    text = last_user_text(request.json)
    # The step the evidence names is there verbatim; the rest is an outline of its headings.
    assert "2. **Explore the API**" in text
    assert "- line 7: # Building an MCP server (" in text
    assert "Patch this root cause: FN + progress_mismatch" in text
    assert proposal.ok, proposal.reason
    assert proposal.skill_text is not None and ADDED + "\n" in proposal.skill_text
    assert len(proposal.skill_text) == len(big) + len(ADDED) + 1


def test_slim_mode_is_measured_from_the_adopted_size() -> None:
    """A skill adopted at 20 KB may still gain a line; past its size plus the margin it may
    only shrink; a small skill keeps the absolute line."""
    conv = Convergence(max_skill_bytes=15_000)
    assert conv.slim_limit(None) == 15_000 and conv.slim_limit(3_000) == 15_000
    assert conv.slim_limit(20_000) == 25_000
    big = SKILL + "".join(f"- `tool_{i}` reads `file_{i}.py`.\n" for i in range(700))
    assert 20_000 < len(big.encode("utf-8")) < 25_000
    assert not conv.slim(big, adopted_bytes=len(big.encode("utf-8")))
    assert conv.slim(big)  # the old absolute line would have frozen it
    grow = patch_of("4. Confirm", "4. Flag pickle loads: `grep -n pickle *.py`\n5. Confirm", big)
    limits = LimitsConfig(max_skill_bytes=15_000)

    def check(**slim: Any) -> FilterReport:
        return run_filters(grow, big, taboo=[], rule_id="r", direction="FN", limits=limits, **slim)

    ok = check(slim_limit=conv.slim_limit(len(big.encode())))
    assert ok.passed, ok.reason()
    refused = check()
    assert not refused.passed and "slim mode" in refused.reason()
