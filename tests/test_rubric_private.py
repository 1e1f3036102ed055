"""The rubric stays private wherever it lives: a skill's own evals/ folder (skill-creator's
convention) and anything named as a rubric never reach the run folder, proven by an agent that
lists and reads everything it can see."""

from __future__ import annotations

import json
from pathlib import Path

from engine.evaluation.runner import run_evaluation
from tests.bench_helpers import write_benchmark, write_case
from tests.runner_helpers import ADVERSARIAL, LABELS, add_skill, command_workspace

EVALS_ANSWER = "expected-output-7f3a: the cursor call in handler.py is injectable"
SKILL_RUBRIC = "skill-rubric-9c1d: grade by the handler finding"
STATEMENT_RUBRIC = "statement-rubric-4e8b: the answer is vulnerable"


def test_an_agent_that_lists_everything_sees_no_evals_and_no_rubric(tmp_path: Path) -> None:
    ws = command_workspace(tmp_path / "ws", ADVERSARIAL, env_allow=())
    evals = json.dumps({"evals": [{"id": 1, "prompt": "audit", "expected_output": EVALS_ANSWER}]})
    add_skill(
        ws,
        "audit",
        "1. Read the code.\n",
        {
            "references/notes.md": "reference text\n",
            "scripts/check.sh": "echo checking\n",
            "evals/evals.json": evals,
            "evals/files/handler.py": "cursor.execute(q)\n",
            "references/rubric.yaml": SKILL_RUBRIC,
        },
    )
    root = write_benchmark(ws.benchmarks_dir / "b", {}, config=LABELS)
    write_case(
        root,
        "one",
        {"expected": "vulnerable"},
        files={"handler.py": "cursor.execute(q)\n", "data/rubric/answer.md": STATEMENT_RUBRIC},
    )

    result = run_evaluation(ws, "b", jobs=1)

    (row,) = result.rows
    lines = (result.run_dir / row["session_file"]).read_text().splitlines()
    answer = next(json.loads(ln)["content"] for ln in reversed(lines) if '"assistant"' in ln)
    report = json.loads(bytes.fromhex(answer.split("REPORT ", 1)[1].split()[0]))
    cwd = Path(report["cwd"])
    seen = {
        Path(p).relative_to(cwd).as_posix()
        for p in report["sibling_files"]
        if Path(p).is_relative_to(cwd)
    }
    # what it is meant to see is there, the skill's resources included
    assert {"handler.py", "PROMPT.md", "prompt.md", "skills/audit/SKILL.md"} <= seen
    assert {"skills/audit/references/notes.md", "skills/audit/scripts/check.sh"} <= seen
    # and nothing private, neither by path nor by content
    assert not [p for p in seen if "evals" in p.split("/") or "rubric" in p]
    dump = json.dumps(report)
    for secret in (EVALS_ANSWER, SKILL_RUBRIC, STATEMENT_RUBRIC):
        assert secret not in dump, f"leaked {secret!r}"
