"""Reflection: the prompt the model gets, how its answer is read, what a valid child is, and the
offline model that answers the same prompt without a network."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.core.skill import SkillDoc
from engine.evaluation.demo.agent import _THOROUGH
from engine.evaluation.patches.material import CaseMaterial, CodeLine
from engine.evaluation.patches.mining import flag_matchers
from engine.loops.gepa.offline import EVERY_STEP, offline_reflection
from engine.loops.gepa.reflection import (
    RECORDS_CLOSE,
    RECORDS_OPEN,
    ReflectionRejected,
    build_prompt,
    field,
    parse_rewrite,
)
from engine.loops.gepa.sections import candidate_id, check_section, render, sections_of
from engine.loops.gepa.sinks import sinks
from tests.candidate_helpers import skill_text

SEED = skill_text(
    "audit",
    steps=[
        "Read the file: `read <file>`.",
        'Flag shell commands: `grep -nE "os\\.system\\(" *.py`',
        "Write the verdict.",
    ],
    pitfalls=["`subprocess.run` with a list starts no shell — not a finding."],
)
PROMPT = "Audit `app.py`. End with `VERDICT: vulnerable` or `VERDICT: safe`."


def record(
    case: int,
    code: str,
    expected: str,
    verdict: str,
    *,
    loaded: bool = True,
    name: str = "app.py",
) -> dict[str, Any]:
    passed = expected == verdict
    return {
        "case": f"case-{case}",
        "input": f"{PROMPT}\n\n--- file {name} ---\n{code}",
        "expected": expected,
        "score": 1.0 if passed else 0.0,
        "verdict": verdict,
        "output": f"VERDICT: {verdict}",
        "feedback": "PASS" if passed else "FAIL",
        "trace": "Skill audit -> ok: loaded" if loaded else "read app.py -> ok: import os",
    }


def ask(section: str, records: list[dict[str, Any]]) -> dict[str, str]:
    prompt = build_prompt(section, sections_of(SEED), records)
    answer = offline_reflection("system", [{"role": "user", "content": prompt}])
    return json.loads(answer)


def added_pitfalls(sections: dict[str, str], records: list[dict[str, Any]]) -> str:
    """What the offline model's rewrite of the Pitfalls adds to those of ``sections``."""
    prompt = build_prompt("pitfalls", sections, records)
    answer = json.loads(offline_reflection("system", [{"role": "user", "content": prompt}]))
    return str(answer["text"]).replace(sections["pitfalls"], "")


# -- the prompt ------------------------------------------------------------------------------------


def test_the_prompt_fences_the_records_and_names_the_section() -> None:
    records = [record(1, "os.system(cmd)", "vulnerable", "vulnerable")]
    prompt = build_prompt("pitfalls", sections_of(SEED), records)
    assert prompt.startswith("Selected section: pitfalls\n")
    inside = prompt.split(RECORDS_OPEN, 1)[1].split(RECORDS_CLOSE, 1)[0]
    assert json.loads(inside) == records


def test_fields_are_redacted_and_bounded() -> None:
    key = "sk-ant-api03-" + "Qm3ZpX7vB1nR4tY6uW0eS5cH2gFa8Kd92jdL"
    text = field(f"token {key} " + "x" * 10_000)
    assert key not in text and "[REDACTED]" in text
    assert len(text) <= 4000 and "...[truncated]..." in text


# -- reading the answer ----------------------------------------------------------------------------


def test_a_fenced_json_answer_is_read() -> None:
    answer = '```json\n{"section": "steps", "text": "1. a\\n2. b", "rationale": "why"}\n```'
    rewrite = parse_rewrite(answer, "steps")
    assert (rewrite.text, rewrite.rationale) == ("1. a\n2. b", "why")


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("no json here", "holds no JSON object"),
        ('{"section": "steps", "text": }', "not valid JSON"),
        ('{"section": "pitfalls", "text": "- a"}', "rewrites 'pitfalls', not 'steps'"),
        ('{"section": "steps", "text": "  "}', "no text for the section"),
        ('{"section": "steps", "text": 3}', "no text for the section"),
    ],
)
def test_unusable_answers_are_rejected(answer: str, problem: str) -> None:
    with pytest.raises(ReflectionRejected, match=problem):
        parse_rewrite(answer, "steps")


# -- what a valid child is -------------------------------------------------------------------------


def test_a_child_renders_into_the_seed_bytes_and_gets_a_content_id() -> None:
    parent = sections_of(SEED)
    assert render(SEED, parent) == SEED
    child = {**parent, "pitfalls": parent["pitfalls"] + "\n- `shlex.quote(` — not a finding."}
    text = render(SEED, child)
    assert text.startswith(SEED.split("## Pitfalls")[0])  # every other byte kept
    assert sections_of(text) == child
    assert candidate_id(child) != candidate_id(parent) == candidate_id(dict(parent))


@pytest.mark.parametrize(
    ("section", "text", "problem"),
    [
        ("steps", "1. Only one step.", "has 1 steps, at least 2"),
        ("steps", "1. a\n2. b\n\n## Extra\n\ntext", "adds a heading"),
        ("pitfalls", "   ", "is empty"),
        ("description", "word " * 300, "longer than 1024"),
    ],
)
def test_invalid_children_are_refused(section: str, text: str, problem: str) -> None:
    parent = sections_of(SEED)
    reason = check_section(SEED, parent, {**parent, section: text}, section)
    assert reason is not None and problem in reason


def test_a_valid_child_passes() -> None:
    parent = sections_of(SEED)
    assert check_section(SEED, parent, {**parent, "steps": "1. a `ls`\n2. b"}, "steps") is None


# -- the offline model -----------------------------------------------------------------------------


def test_offline_missed_positive_becomes_a_flag_step() -> None:
    records = [
        record(
            1,
            "import pickle\ndef load(blob):\n    return pickle.loads(blob)\n",
            "vulnerable",
            "safe",
        ),
        record(2, "import json\ndef load(blob):\n    return json.loads(blob)\n", "safe", "safe"),
    ]
    answer = ask("steps", records)
    assert answer["section"] == "steps"
    new = answer["text"]
    assert new.startswith(sections_of(SEED)["steps"])  # the old steps stay, one is added
    assert '`grep -nE "\\bpickle\\.loads\\(" *.py`' in new
    assert "json" not in new  # a call the negative case makes too is not flagged


def test_offline_false_alarm_becomes_a_pitfall() -> None:
    records = [
        record(1, 'os.system("ls " + shlex.quote(name))\n', "safe", "vulnerable"),
        record(2, 'os.system("ls " + name)\n', "vulnerable", "vulnerable"),
    ]
    answer = ask("pitfalls", records)
    added = answer["text"].replace(sections_of(SEED)["pitfalls"], "")
    assert "shlex" in added and "not a finding" in added


def test_offline_unloaded_skill_gets_the_task_words() -> None:
    records = [record(1, "os.system(cmd)", "vulnerable", "safe", loaded=False)]
    records[0]["input"] = "Is deployment.py ready to merge?\n\n--- file deployment.py ---\nx"
    answer = ask("description", records)
    assert "ready" in answer["text"] and "merge" in answer["text"]


def test_offline_answers_unchanged_when_nothing_supports_an_edit() -> None:
    records = [record(1, "print(1)", "safe", "safe")]
    for section in ("steps", "pitfalls", "when_to_use", "description"):
        answer = ask(section, records)
        assert answer["text"] == sections_of(SEED)[section]


def test_offline_a_hasty_or_unreviewed_failure_asks_for_every_step() -> None:
    hasty = record(1, 'os.system("ls " + shlex.quote(d))\n', "safe", "vulnerable")
    hasty["output"] = "The first finding settles it; concluding now.\nVERDICT: vulnerable"
    kept = record(2, "subprocess.run(['ls', d])\nos.system(x)\n", "safe", "vulnerable")
    # a finding the skill's own Pitfalls rule out, kept all the same: the review was skipped
    kept["output"] = (
        "Findings:\n- app.py:1 (step 2): subprocess.run(['ls', d])\nVERDICT: vulnerable"
    )
    for failing in (hasty, kept):
        answer = ask("when_to_use", [failing, record(3, "print(1)", "safe", "safe")])
        before = sections_of(SEED)["when_to_use"]
        assert answer["text"] == f"{before}\n{EVERY_STEP}"
        assert "skipped the Pitfalls review in case-" in answer["rationale"]
    # The demo agent reads the line as "finish every step first".
    assert _THOROUGH.search(EVERY_STEP)
    # A failure that shows neither leaves the section alone.
    plain = record(4, "os.system(x)\n", "vulnerable", "safe")
    assert ask("when_to_use", [plain])["text"] == sections_of(SEED)["when_to_use"]


def test_offline_a_flag_step_that_matches_a_skipped_language_searches_it_too() -> None:
    missed = record(1, 'os.system("ls " + d)\n', "vulnerable", "safe")
    missed["input"] = f'{PROMPT}\n\n--- file app.rb ---\nos.system("ls " + d)\n'
    answer = ask("steps", [missed])
    assert '`grep -nE "os\\.system\\(" *.py *.rb`' in answer["text"]
    assert answer["text"].count("\n") == sections_of(SEED)["steps"].count("\n")  # no new step
    assert "step 2 also searches *.rb" in answer["rationale"]


def test_offline_a_plain_word_is_never_made_a_pitfall() -> None:
    # The only token the false alarm has and the positive lacks is the word "name": from two
    # records it looks like a guard, across a benchmark it would hide real findings.
    records = [
        record(1, "os.system(name)\n", "safe", "vulnerable"),
        record(2, "os.system(other)\n", "vulnerable", "vulnerable"),
    ]
    assert ask("pitfalls", records)["text"] == sections_of(SEED)["pitfalls"]


def test_offline_steps_rewrite_covers_every_missed_positive_it_can() -> None:
    # Two missed positives that need two different edits: the shell call in a language the flag
    # step skips, and a call no step flags. One rewrite makes both, as a model reading both
    # records would, each mined on the steps as edited so far.
    ruby = record(1, 'os.system("ls " + d)\n', "vulnerable", "safe")
    ruby["input"] = f'{PROMPT}\n\n--- file app.rb ---\nos.system("ls " + d)\n'
    records = [
        ruby,
        record(
            2,
            "import pickle\ndef load(blob):\n    return pickle.loads(blob)\n",
            "vulnerable",
            "safe",
        ),
        record(3, "import json\ndef load(blob):\n    return json.loads(blob)\n", "safe", "safe"),
    ]
    answer = ask("steps", records)
    assert '`grep -nE "os\\.system\\(" *.py *.rb`' in answer["text"]
    assert '`grep -nE "\\bpickle\\.loads\\(" *.py`' in answer["text"]
    assert "step 2 also searches *.rb; then new flag step for case-2" in answer["rationale"]


def test_offline_never_rules_out_the_sink_a_flag_step_searches_for() -> None:
    # The false alarm's only API the minibatch's positive lacks is `execute(` itself: as a
    # guard it would clear every real finding of the SQL step across the benchmark.
    sections = {
        **sections_of(SEED),
        "steps": "\n".join(
            [
                "1. Read the file: `read <file>`.",
                '2. Flag SQL built by concatenation: `grep -nE "execute\\(.*\\+" *.py`',
                "3. Write the verdict.",
            ]
        ),
    }
    records = [
        record(1, 'cur.execute("SELECT 1 " + "LIMIT 1")\n', "safe", "vulnerable"),
        record(2, 'os.system("ls " + d)\n', "vulnerable", "vulnerable"),
    ]
    assert added_pitfalls(sections, records) == ""


# -- the call that receives the input ----------------------------------------------------------

TRACED = {
    **sections_of(SEED),
    "steps": "\n".join(
        [
            "1. Read the file: `read <file>`.",
            '2. Trace the input with `grep -nE "<source>" <file>` for each of `r.URL.Query(`, '
            "`request.args`, `$_GET`.",
            "3. Write the verdict.",
        ]
    ),
}
GO_FETCH = """package hook

func Test(w http.ResponseWriter, r *http.Request) {
\tresp, err := http.Get(r.URL.Query().Get("url"))
\tdefer resp.Body.Close()
\tio.Copy(w, resp.Body)
}
"""
GO_CONSTANT = """package hook

func Up() {
\tresp, err := http.Get(upstream)
\tdefer resp.Body.Close()
}
"""


def go_record(case: int, code: str, expected: str, verdict: str) -> dict[str, Any]:
    found = record(case, code, expected, verdict)
    found["input"] = f"Audit `hook.go`. End with `VERDICT: x`.\n\n--- file hook.go ---\n{code}"
    return found


def lines_of(path: str, code: str) -> CaseMaterial:
    numbered = tuple(CodeLine(path, n, t) for n, t in enumerate(code.splitlines(), start=1))
    return CaseMaterial("c", "vulnerable", "FN", None, numbered)


def test_offline_a_missed_positive_flags_the_call_that_receives_the_input() -> None:
    # The missed positive calls http.Get, resp.Body.Close and io.Copy; the near-miss negative
    # calls http.Get too, with a constant URL. The step names what makes the positive one:
    # a call handed the request's input as its argument — in every language the skill
    # searches, since that lesson is not Go's — not the incidental io.Copy, and not the
    # constant fetch of the near-miss.
    records = [
        go_record(1, GO_FETCH, "vulnerable", "safe"),
        go_record(2, GO_CONSTANT, "safe", "safe"),
    ]
    answer = ask_traced(records)
    added = answer["text"].replace(TRACED["steps"].rsplit("\n", 1)[0], "")
    assert "Flag calls handed user input as their argument: `grep -nE " in added
    assert "io.Copy" not in added and "Close" not in added
    assert added.endswith(" *.go`")
    assert answer["rationale"] == "offline: a call is handed user input in case-1"
    assert flagged(answer, GO_FETCH) and not flagged(answer, GO_CONSTANT)


def test_offline_input_reaching_a_call_through_a_variable_flags_that_call() -> None:
    # The URL is read into a variable first, so no call is handed the source itself: the step
    # names the call the variable goes to (its constant-URL twin is no finding).
    fetch = 'src = request.args.get("src")\nbody = requests.get(src, timeout=3).content\n'
    records = [record(1, fetch, "vulnerable", "safe"), record(2, "x = 1\n", "safe", "safe")]
    answer = ask_traced(records)
    assert (
        'Flag requests.get( calls that take input built from user input: `grep -nE "\\brequests'
        '\\.get\\(" *.py`' in answer["text"]
    )
    assert answer["rationale"] == "offline: requests.get( receives user input in case-1"
    assert flagged(answer, fetch, "app.py")


def ask_traced(records: list[dict[str, Any]]) -> dict[str, str]:
    prompt = build_prompt("steps", TRACED, records)
    answer: dict[str, str] = json.loads(
        offline_reflection("system", [{"role": "user", "content": prompt}])
    )
    return answer


def flagged(answer: dict[str, str], code: str, path: str = "hook.go") -> bool:
    """Whether a flag step of the rewritten skill has a hit in ``code``."""
    doc = SkillDoc.parse(render(SEED, {**TRACED, "steps": answer["text"]}))
    return any(m.hits(lines_of(path, code).lines) for m in flag_matchers(doc))


def test_a_sink_is_the_outermost_call_fed_by_a_source_or_a_variable_read_from_one() -> None:
    sources = ["request.args", "$_GET", "r.FormValue("]
    nested = 'f, err := os.Open(filepath.Join("/srv", r.FormValue("file")))\n'
    assert [(s.form, s.direct) for s in sinks(lines_of("x.go", nested), sources)] == [
        ("os.Open(", True)
    ]
    # through a variable; only the call it is handed to, not the string naming a key
    flow = 'src = request.args.get("src")\nname = "src"\nbody = requests.get(src).content\n'
    found = sinks(lines_of("x.py", flow), sources)
    assert [(s.form, s.pattern, s.direct) for s in found] == [
        ("requests.get(", "\\brequests\\.get\\(", False)
    ]
    # a method of a receiver the file defines is named by its method; the concatenation that
    # builds the argument is part of the pattern, and the dash of -> is no grep option
    php = '$db = new mysqli();\n$id = $_GET["id"];\n$db->query("SELECT " . $id);\n'
    assert [(s.form, s.pattern) for s in sinks(lines_of("x.php", php), sources)] == [
        ("->query(", "[-]>query\\(.*\\. *\\$")
    ]
    # a function's own definition takes its parameters; it hands them to nothing
    handler = (
        'func Serve(w http.ResponseWriter, r *http.Request) {\n\thttp.Get(r.FormValue("u"))\n}\n'
    )
    assert [s.form for s in sinks(lines_of("x.go", handler), sources)] == ["http.Get("]
    # a file with no source hands nothing on
    assert sinks(lines_of("x.py", 'requests.get("https://example.com")\n'), sources) == []


def test_offline_drops_only_the_pitfall_that_would_hide_real_findings() -> None:
    # Two false alarms in one minibatch: the SQL one's only guard-shaped API is the SQL step's
    # own sink `execute(`, the shell one is guarded by `shlex.quote(`. The cover of both holds
    # `execute(`; that item alone is left out, and the shell guard still becomes a Pitfalls item
    # (before, the whole cover went, and with it the shell guard).
    sections = {
        **sections_of(SEED),
        "steps": "\n".join(
            [
                "1. Read the file: `read <file>`.",
                '2. Flag SQL built by concatenation: `grep -nE "execute\\(.*\\+" *.py`',
                '3. Flag shell commands: `grep -nE "os\\.system\\(" *.py`',
                "4. Write the verdict.",
            ]
        ),
    }
    shell = 'os.system("tar czf x.tgz " + shlex.quote(folder))\n'
    records = [
        record(1, 'cur.execute("SELECT 1 " + "LIMIT 1")\n', "safe", "vulnerable"),
        record(2, shell, "safe", "vulnerable"),
        record(3, 'os.system("ls " + d)\n', "vulnerable", "vulnerable"),
    ]
    added = added_pitfalls(sections, records)
    assert "`shlex.quote(`" in added
    assert "execute(" not in added


def test_offline_a_safe_file_the_skill_flags_is_a_false_alarm_even_when_the_run_passed() -> None:
    # The agent slipped past the skill's own false alarm (misread the hit) and answered "safe":
    # the record passed, but the skill as written flags the guarded line, so its guard is learnt.
    # A passing record the skill does not flag, or whose run never loaded the skill, asks for
    # nothing.
    slipped = record(1, 'os.system("ls " + shlex.quote(name))\n', "safe", "safe")
    assert "shlex.quote(" in ask("pitfalls", [slipped])["text"]
    unflagged = record(1, 'subprocess.run(["ls", name])\n', "safe", "safe")
    unloaded = {**slipped, "trace": "read app.py -> ok: import os"}
    for records in ([unflagged], [unloaded]):
        assert ask("pitfalls", records)["text"] == sections_of(SEED)["pitfalls"]


def test_offline_a_guard_beside_the_input_goes_before_a_call_that_converts_it() -> None:
    # `base64_decode(` wraps the input the flagged call gets and only decodes it: as a guard
    # it would also clear `unserialize(base64_decode($_COOKIE…))` with no allowed_classes.
    sections = {
        **sections_of(SEED),
        "steps": "\n".join(
            [
                "1. Read the file: `read <file>`.",
                '2. Flag unsafe deserialization: `grep -nE "unserialize\\(" *.php`',
                "3. Write the verdict.",
            ]
        ),
    }
    code = "$items = unserialize(base64_decode($_POST['b']), ['allowed_classes' => false]);\n"
    added = added_pitfalls(sections, [record(1, code, "safe", "vulnerable", name="app.php")])
    assert "`allowed_classes`" in added
    assert "base64_decode" not in added


def test_offline_a_sink_handed_a_literal_list_is_named_in_that_form() -> None:
    # PDO binds the values of `->execute([…])` as parameters: the guard is the sink called with
    # a list, never the sink itself (`execute(` would hide every concatenated query). A Python
    # query whose values go in a tuple gets no such item.
    sections = {
        **sections_of(SEED),
        "steps": "\n".join(
            [
                "1. Read the file: `read <file>`.",
                '2. Flag built SQL: `grep -nE "(execute|query)\\(.*(\\.|%)" *.php *.py`',
                "3. Write the verdict.",
            ]
        ),
    }

    def pitfalls(name: str, code: str) -> str:
        return added_pitfalls(sections, [record(1, code, "safe", "vulnerable", name=name)])

    php = "$stmt = $pdo->prepare('SELECT ?');\n$stmt->execute(['%' . $_GET['q'] . '%']);\n"
    assert "`->execute([`" in pitfalls("app.php", php)
    assert "execute" not in pitfalls("app.py", 'cur.execute("SELECT 1 WHERE a = %s", (a,))\n')
