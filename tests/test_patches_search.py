"""How the offline proposer searches: boldest candidate first, narrower after a rejection.

A small benchmark is evaluated for real with the demo agent; the proposer then gets the rows,
a root cause and a taboo list, as the evolution loop hands them over.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.core.benchmark import load_benchmark
from engine.core.skill import SkillDoc
from engine.core.taboo import TabooEntry, diff_hash
from engine.core.workspace import Workspace
from engine.evaluation.demo.agent import discard_rules, plan
from engine.evaluation.demo.tools import RunDir
from engine.evaluation.patches import OfflineProposer, ProposalContext
from engine.evaluation.patches.material import CaseMaterial, CodeLine
from engine.evaluation.patches.mining import (
    construct,
    flag_matchers,
    fn_patterns,
    greedy_covers,
    nesting,
    source_pattern,
)
from engine.evaluation.patches.offline_proposer import found, guard_tokens, ordered_targets
from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_case
from tests.patch_helpers import diagnosis

SKILL = """\
---
name: net-audit
description: Audit one Python file for command injection and SSRF, when asked if it is vulnerable.
---

# Net audit

## Steps

1. Read the file under audit: `read <file>`.
2. Flag shell commands: `grep -nE "os\\.system\\(" *.py`
3. Confirm with `read -n <file>` and drop every hit the Pitfalls rule out.

## Pitfalls

- A command made of constants only is harmless.
"""
CASES: dict[str, tuple[str, str]] = {
    # two missed positives with different sinks …
    "ssrf-urlopen": (
        "vulnerable",
        "import urllib.request\n\n\ndef preview(request):\n"
        '    return urllib.request.urlopen(request.args["u"]).read()\n',
    ),
    "ssrf-requests": (
        "vulnerable",
        "import requests\n\n\ndef fetch(request):\n"
        '    return requests.get(request.args["u"]).text\n',
    ),
    # … and a near miss that shares the first sink behind a guard
    "ssrf-allowlisted": (
        "safe",
        "import urllib.request\n\n\ndef preview(request):\n"
        '    return urllib.request.urlopen(allowlisted(request.args["u"])).read()\n',
    ),
    # a false alarm whose guard sits inside the flagged call
    "cmd-quoted": (
        "safe",
        "import os\nimport shlex\n\n\ndef ping(host):\n"
        '    os.system("ping -c 1 " + shlex.quote(host))\n',
    ),
}
PROMPT = (
    "Audit `{name}` for command injection or SSRF.\n\n"
    "End with `VERDICT: vulnerable` or `VERDICT: safe`.\n"
)
FN = {
    "rule_id": "progress_mismatch",
    "direction": "FN",
    "case_ids": ["ssrf-urlopen", "ssrf-requests"],
}
FP = {"rule_id": "premature_conclusion", "direction": "FP", "case_ids": ["cmd-quoted"]}


def _context(workspace: Workspace, **kwargs: Any) -> ProposalContext:
    skill = workspace.skill_path("net-audit")
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(SKILL, encoding="utf-8")
    root = workspace.benchmarks_dir / "net"
    if not root.is_dir():
        root.mkdir(parents=True)
        config = {"labels": ["vulnerable", "safe"], "runs_per_case": 1, "seed": 7}
        (root / "benchmark.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        for case_id, (label, code) in CASES.items():
            name = case_id.replace("-", "_") + ".py"
            write_case(
                root,
                case_id,
                {"expected": label, "split": "selection"},
                prompt=PROMPT.format(name=name),
                files={name: code},
            )
    rows = run_evaluation(workspace, "net", runs=1, jobs=2).rows
    outcome = {r["case_id"]: r["pass_fail"] for r in rows}
    assert outcome == {
        "ssrf-urlopen": "fail",
        "ssrf-requests": "fail",
        "ssrf-allowlisted": "pass",
        "cmd-quoted": "fail",
    }
    defaults: dict[str, Any] = {
        "skill_name": "net-audit",
        "skill_text": SKILL,
        "diagnosis": diagnosis(FN),
        "feedback_rows": rows,
        "bench": load_benchmark(root),
    }
    return ProposalContext(**{**defaults, **kwargs})


def _new_commands(text: str) -> list[str]:
    return [s.command for s in plan(SkillDoc.parse(text)) if s.command and s.command not in SKILL]


def test_the_boldest_cover_comes_first_and_a_broken_case_narrows_the_next(
    workspace: Workspace,
) -> None:
    ctx = _context(workspace)
    proposer = OfflineProposer(workspace, seed=7)

    bold = proposer.propose(ctx)

    assert bold.ok and bold.skill_text is not None and bold.diff is not None
    assert set(bold.case_ids) == {"ssrf-urlopen", "ssrf-requests"}
    (command,) = _new_commands(bold.skill_text)
    assert "urlopen" in command and "get" in command
    # the near miss is spared by a Pitfalls guard only
    assert any(
        "allowlisted(" in group
        for rule in discard_rules(SkillDoc.parse(bold.skill_text))
        for group in rule
    )

    # the guardrail gate found the guard was not enough: the next candidate keeps off that case
    why = "gate rejected: guardrail: 1 previously passing case now fails: ssrf-allowlisted"
    entry = TabooEntry(bold.taboo_rule, diff_hash(bold.diff), why, "2026-05-27T00:00:00Z")
    narrow = proposer.propose(_context(workspace, taboo_entries=[entry]))

    assert narrow.ok and narrow.skill_text is not None
    assert narrow.case_ids == ("ssrf-requests",)
    (command,) = _new_commands(narrow.skill_text)
    assert "urlopen" not in command
    allowlisted = CASES["ssrf-allowlisted"][1]
    pattern = command.split('"')[1]
    assert not any(re.search(pattern, line) for line in allowlisted.splitlines())
    assert "allowlisted(" not in narrow.skill_text


def test_a_pitfalls_item_comes_with_the_every_step_item_and_alone_once_that_is_rejected(
    workspace: Workspace,
) -> None:
    ctx = _context(workspace, diagnosis=diagnosis(FP))
    proposer = OfflineProposer(workspace, seed=7)
    alone = proposer.propose(ctx)
    # the every-step item is the first answer to haste; say it fixed nothing
    assert alone.ok and alone.diff is not None and alone.skill_text is not None
    assert "run all steps before you conclude" in alone.skill_text
    why = "gate rejected: target: fixed 0 of 1 targeted failing case, 1 wanted"
    taboo = [TabooEntry(alone.taboo_rule, diff_hash(alone.diff), why, "2026-05-27T00:00:00Z")]

    # an agent that concludes at its first hit never reads a Pitfalls item: it comes with the
    # every-step item first
    both = proposer.propose(_context(workspace, diagnosis=diagnosis(FP), taboo_entries=taboo))
    assert both.ok and both.diff is not None and both.skill_text is not None
    added = [ln[1:] for ln in both.diff.splitlines() if ln.startswith("+- ")]
    assert len(added) == 2 and "run all steps before you conclude" in added[-1]
    taboo.append(TabooEntry(both.taboo_rule, diff_hash(both.diff), why, "2026-05-27T00:00:01Z"))

    pitfall = proposer.propose(_context(workspace, diagnosis=diagnosis(FP), taboo_entries=taboo))
    assert pitfall.ok and pitfall.diff is not None and pitfall.skill_text is not None
    assert pitfall.attempts == both.attempts + 1
    assert "run all steps" not in pitfall.skill_text
    assert [ln[1:] for ln in pitfall.diff.splitlines() if ln.startswith("+- ")] == added[:1]


def test_a_guard_is_what_wraps_the_input_not_the_sink_the_step_found(
    workspace: Workspace,
) -> None:
    proposal = OfflineProposer(workspace, seed=7).propose(
        _context(workspace, diagnosis=diagnosis({**FP, "rule_id": "progress_mismatch"}))
    )
    assert proposal.ok and proposal.skill_text is not None
    guards = {
        p for rule in discard_rules(SkillDoc.parse(proposal.skill_text)) for g in rule for p in g
    }
    assert guards & {"shlex.quote(", "quote("}
    assert not guards & {"os.system(", "system("}

    line = 'out = subprocess.run("tar " + shlex.quote(x), shell=True)'
    tokens = guard_tokens(line, ["subprocess.run(cmd)"], [re.compile(r"shell=True")])
    assert "shlex.quote(" in tokens
    assert "shell=True" not in tokens and "subprocess.run(" not in tokens
    assert nesting("shlex.quote(", [line]) == 1 and nesting("subprocess.run(", [line]) == 0


def test_the_source_pattern_matches_in_the_agents_own_grep(tmp_path: Path) -> None:
    # Python's re reads ``[\w$]`` as a word class, POSIX grep as three characters: a pattern
    # checked only in Python can look right to the proposer and never fire for the agent
    line = '        try (InputStream in = new URL(req.getParameter("feed")).openStream()) {'
    case = CaseMaterial(
        "ssrf-java-url", "vulnerable", "FN", "ssrf", (CodeLine("FeedServlet.java", 13, line),)
    )
    mined = source_pattern(["getParameter(", "request.args"], [case], {"*.java"})
    assert mined is not None
    pattern, info = mined
    assert info.cases == {"ssrf-java-url"}
    (tmp_path / "FeedServlet.java").write_text(f"class FeedServlet {{\n{line}\n}}\n")
    outcome = RunDir(tmp_path).run(f'grep -nE "{pattern}" *.java')
    assert not outcome.is_error, outcome.output
    assert [hit.line for hit in outcome.hits] == [2]


@pytest.mark.parametrize(
    ("token", "generalises"),
    [
        ("shlex.quote(", True),  # a qualified call
        ("basename(", True),  # a long bare call name
        ("usedforsecurity=False", True),  # a keyword argument set to a constant
        ("yaml.SafeLoader", True),
        ("ValidatingObjectInputStream", True),
        ("from(", False),  # a short bare call: Buffer.from( or anything else
        ("name=request", False),  # an argument bound to a local variable
        (",))", False),  # the punctuation of one line
        ("UPLOAD_DIR", False),  # the file's own constant
        ("upload", False),  # a plain word
    ],
)
def test_pitfalls_name_constructs_not_raw_tokens(token: str, generalises: bool) -> None:
    assert construct(token) is generalises
    line = f"    return sink({token} x)"
    assert (token in guard_tokens(line, [], [])) is generalises


def test_a_cover_is_one_patch_whatever_the_ranking_order() -> None:
    # two rounds rank tied patterns by different seeds; the same set must give the same diff,
    # or a rejected patch comes back reordered, past the taboo list, as a new experiment
    hit = {"a": {"c1"}, "b": {"c2"}, "c": {"c1", "c2"}}
    one = list(greedy_covers(["b", "a", "c"], hit, {"c1", "c2"}, 3))
    other = list(greedy_covers(["a", "b", "c"], hit, {"c1", "c2"}, 3))
    assert one[0] == other[0] == ("a", "b")
    assert len(one) == len(set(one))


def _lines(path: str, code: str) -> tuple[CodeLine, ...]:
    return tuple(CodeLine(path, n, text) for n, text in enumerate(code.splitlines(), 1))


def test_flag_patterns_come_from_the_calls_the_input_reaches() -> None:
    # the sink is the call the request's value is handed to, directly or through a variable;
    # the file's other calls (logging, the error reply, the encoder) fit this file alone
    code = (
        "def image(request):\n"
        '    src = request.args.get("src")\n'
        '    log.info("fetching an image")\n'
        "    body = requests.get(src, timeout=3).content\n"
        "    return base64.b64encode(body)\n"
    )
    case = CaseMaterial("ssrf-py-proxy", "vulnerable", "FN", "ssrf", _lines("proxy.py", code))
    mined = fn_patterns([case], ["request.args"])
    assert r"\brequests\.get\(" in mined
    assert not any("log" in p or "info" in p for p in mined)


def test_a_missed_positive_a_step_already_finds_is_no_gap_to_mine() -> None:
    # the step finds ``os.system(`` here: the run that missed it slipped, and a second step
    # for what the file happens to call as well would only fit this one file
    doc = SkillDoc.parse(SKILL)
    slipped = CaseMaterial(
        "cmd-slipped",
        "vulnerable",
        "FN",
        "command-injection",
        _lines("ping.py", "def ping(host):\n    os.system('ping ' + host)\n"),
    )
    missed = CaseMaterial(
        "ssrf-missed",
        "vulnerable",
        "FN",
        "ssrf",
        _lines("get.py", "def get(url):\n    return urlopen(url)\n"),
    )
    rules = discard_rules(doc)
    assert found(slipped, flag_matchers(doc), rules)
    assert not found(missed, flag_matchers(doc), rules)


def test_after_a_rejection_the_next_round_tries_another_root_cause() -> None:
    fn = {"rule_id": "progress_mismatch", "direction": "FN", "case_ids": ["a", "b", "c"]}
    haste = {"rule_id": "premature_conclusion", "direction": "FP", "case_ids": ["d", "e"]}
    single = {"rule_id": "tool_loop", "direction": "FN", "case_ids": ["f"]}
    found_causes = diagnosis(fn, {**haste, "worth_patch": False}, {**single, "worth_patch": False})
    ctx = ProposalContext(skill_name="net-audit", skill_text=SKILL, diagnosis=found_causes)
    # the cause worth a patch first; a smaller one of two cases after it; one case is no cause
    assert [t.rule_id for t in ordered_targets(ctx)] == [
        "progress_mismatch",
        "premature_conclusion",
    ]

    rejected = TabooEntry(
        "progress_mismatch:FN", "0" * 64, "gate rejected: target: inconclusive", "2026-05-27"
    )
    after = ProposalContext(
        skill_name="net-audit",
        skill_text=SKILL,
        diagnosis=found_causes,
        taboo_entries=[rejected],
    )
    assert [t.rule_id for t in ordered_targets(after)] == [
        "premature_conclusion",
        "progress_mismatch",
    ]
    # a cause asked for by name is the only one tried
    named = ProposalContext(
        skill_name="net-audit",
        skill_text=SKILL,
        diagnosis=found_causes,
        taboo_entries=[rejected],
        target="FN + progress_mismatch",
    )
    assert [t.rule_id for t in ordered_targets(named)] == ["progress_mismatch"]
