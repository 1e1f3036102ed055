# ruff: noqa: E501  (a SKILL.md step is one line; the better skill below is quoted verbatim)
"""Calibration of the bundled demo through the real runner (slow: two full evaluations).

The shipped skill must be mediocre in a way a proposer can fix: F1 in [0.45, 0.75] over the
benchmark with 2 runs per case (the demo ships noisy: its run-to-run slips cost the shipped skill
a few points, about 0.50–0.56 over seeds, so the band's floor moved down from 0.55), every diagnosis rule firing somewhere, and a better SKILL.md —
the same document with an SSRF step, steps that cover every language, sharper near-miss
pitfalls, a description that also triggers on "merge"/"ship" tasks, no looping wording and
"run every step before concluding" — scoring clearly higher.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.benchmark import load_benchmark
from engine.core.skill import SkillDoc
from engine.core.workspace import Workspace
from engine.evaluation.demo import DEMO_BENCHMARK, DEMO_SKILL, copy_demo
from engine.evaluation.diagnosis import BUILTIN_RULE_IDS
from engine.evaluation.diagnosis.run import diagnose_run, load_run
from engine.evaluation.runner import run_evaluation

pytestmark = pytest.mark.slow

BETTER_DESCRIPTION = (
    "Audit one source file for security vulnerabilities such as SQL injection, command injectio"
    "n, path traversal, unsafe deserialization, cross-site scripting, SSRF, hard-coded secrets "
    "and weak crypto. Use when asked to audit code, find a vulnerability, decide whether a file"
    " is vulnerable, or review a change before you merge or ship it."
)
BETTER_STEPS = r"""\
1. See what you were given: `list`.
2. Read the file under audit once, top to bottom: `read <file>`.
3. Flag SQL built by concatenation or string formatting: `grep -niE "(execute|query|prepare)\w*\(.*(\+|%|\$\{|f\")|Sprintf\(\"SELECT|query\(\".*\" \. \\$" *.py *.js *.php *.java *.go`
4. Flag shell commands built from input: `grep -nE "system\(|shell=True|child_process|shell_exec|passthru|\"-c\"" *.py *.js *.php *.go *.java`
5. Flag file paths built from request input: `grep -nE "open\(.*\+|sendFile\(|readFile(Sync)?\(.*\+|readfile\(|Paths\.get\(.*\+|ServeFile\(" *.py *.js *.php *.java *.go`
6. Flag unsafe deserialization: `grep -nE "pickle\.loads?\(|yaml\.load\(|unserialize\(|readObject\(" *.py *.js *.php *.java`
7. Flag markup built from input: `grep -nE "innerHTML|document\.write|echo .*\\$_(GET|POST)|render_template_string|println\(.*getParameter" *.js *.php *.py *.java`
8. Flag requests to a URL taken from input: `grep -nE "requests\.(get|post)\(url|fetch\(req\.|http\.Get\(r\.|new URL\(req\.|curl_init\(\\$_" *.py *.js *.go *.java *.php`
9. Trace the user input you saw with `grep -nF "<source>" <file>`, once for each of these sources that appears in the file: `request.args`, `request.form`, `req.query`, `req.body`, `$_GET`, `getParameter`, `getHeader`, `input`, `r.URL.Query`, `r.FormValue`.
10. Note local includes with `grep -nE "^(from \.|require\(.\./|include|require_once)" <file>`.
11. Flag hard-coded secrets and weak crypto: `grep -niE "(password|secret|api_?key|\w*token)\s*=\s*[\"']|md5|sha1|des-|ecb" *.py *.js *.java *.go *.php`
12. Confirm: re-read the file with line numbers, `read -n <file>`, and drop every hit the Pitfalls rule out.
"""
BETTER_PITFALLS = r"""\
- Run every step before concluding: one hit does not settle the verdict until the Pitfalls are checked.
- A query with `?` placeholders and the values passed separately is parameterised — not a finding.
- A query with `%s", (` passes its values as a separate tuple — not a finding.
- `->execute([` binds values to a prepared statement — not a finding.
- `execFile` with an argument array starts no shell — not a finding.
- A shell argument wrapped in `shlex.quote(` or `escapeshellarg(` is quoted — not a finding.
- `sendFile` with a `{ root:` option stays inside that root — not a finding.
- A path reduced with `basename(` or `filepath.Base(` has no directory part — not a finding.
- `yaml.load` with `Loader=yaml.SafeLoader` builds plain data only — not a finding.
- `unserialize` with `'allowed_classes' => false` creates no objects — not a finding.
- `ValidatingObjectInputStream` with `accept(` allows listed classes only — not a finding.
- HTML passed through `DOMPurify.sanitize(` is sanitised — not a finding.
- Output wrapped in `htmlspecialchars(` is escaped — not a finding.
- `md5` with `usedforsecurity=False` is a checksum, not a password hash — not a finding.
"""


def better_skill(shipped: str) -> str:
    doc = SkillDoc.parse(shipped)
    doc = doc.with_frontmatter_value("description", BETTER_DESCRIPTION)
    doc = doc.with_section("steps", BETTER_STEPS.strip("\n"))
    return doc.with_section("pitfalls", BETTER_PITFALLS.strip("\n")).render()


def test_shipped_skill_is_mediocre_and_a_better_one_scores_clearly_higher(tmp_path: Path) -> None:
    ws = Workspace.at(copy_demo(tmp_path / "demo"))
    shipped = ws.skill_path(DEMO_SKILL).read_text(encoding="utf-8")

    cases = len(load_benchmark(ws.benchmarks_dir / DEMO_BENCHMARK).cases)
    # fixed seeds: the demo is noisy, and a band check on one unseeded draw fails now and then
    # (the shipped skill's F1 spreads about 0.50-0.56 over seeds)
    base = run_evaluation(ws, DEMO_BENCHMARK, runs=2, jobs=2, seed=20261201)
    assert base.metrics.invalid == 0 and base.metrics.valid == 2 * cases
    assert base.metrics.f1 is not None and 0.45 <= base.metrics.f1 <= 0.75
    assert {r["run_index"] for r in base.rows} == {0, 1}

    diagnosis = diagnose_run(load_run(base.run_id, ws), skill=DEMO_SKILL)
    fired = {rule for case in diagnosis.cases for rule in case.rule_ids}
    assert fired >= set(BUILTIN_RULE_IDS)

    better = better_skill(shipped)
    assert better != shipped
    improved = run_evaluation(
        ws, DEMO_BENCHMARK, runs=1, jobs=2, skills={DEMO_SKILL: better}, seed=20261202
    )
    assert improved.metrics.f1 is not None
    assert improved.metrics.f1 >= base.metrics.f1 + 0.2
