"""apply_patch: exact application of unified diffs, round trips, CRLF, refusals naming the hunk."""

from __future__ import annotations

import random

import pytest

from engine.core.store import unified_diff
from engine.core.taboo import TabooEntry, diff_hash
from engine.evaluation.patches import (
    PatchError,
    apply_patch,
    signature,
    split_taboo_rule,
    taboo_rule,
)
from engine.evaluation.patches.signature import blocking_entry, same_edit
from tests.patch_helpers import SKILL, patch_of


def _mutations(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    eol = "\r\n" if "\r\n" in text else "\n"
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(lines) + 1)
        kind = rng.choice("adm")
        if kind == "a":
            lines.insert(at, f"added {rng.randint(0, 99)}{eol}")
        elif at < len(lines):
            if kind == "d":
                del lines[at]
            else:
                lines[at] = f"changed {rng.randint(0, 9)}{eol}"
    return "".join(lines)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_round_trips_of_random_edits(eol: str) -> None:
    rng = random.Random(7)
    base = SKILL.replace("\n", eol)
    done = 0
    for _ in range(200):
        old = base if rng.random() < 0.7 else base.rstrip("\r\n")  # with and without final EOL
        new = _mutations(old, rng)
        if rng.random() < 0.3:
            new = new.rstrip("\r\n")
        if new == old:
            continue
        assert apply_patch(old, unified_diff(old, new)) == new
        done += 1
    assert done > 150


def test_lf_diff_applies_to_crlf_text_keeping_its_line_endings() -> None:
    crlf = SKILL.replace("\n", "\r\n")
    diff = patch_of("4. Confirm", "4. Flag pickle: `grep -n pickle *.py`\n5. Confirm")
    assert "\r" not in diff

    out = apply_patch(crlf, diff)

    assert out == crlf.replace("4. Confirm", "4. Flag pickle: `grep -n pickle *.py`\r\n5. Confirm")
    assert "\n" not in out.replace("\r\n", "")


def test_crlf_diff_round_trip_is_byte_exact() -> None:
    crlf = SKILL.replace("\n", "\r\n")
    new = crlf.replace(
        "## Pitfalls\r\n\r\n", "## Pitfalls\r\n\r\n- `yaml.safe_load(` — not a finding.\r\n"
    )
    diff = unified_diff(crlf, new)
    assert "\r\n" in diff

    assert apply_patch(crlf, diff).encode() == new.encode()


def test_hunk_found_at_another_line_than_its_header_says() -> None:
    diff = patch_of("3. Flag shell calls", "3. Flag shell calls (also `os.popen(`)")
    shifted = "line one\nline two\n" + SKILL

    out = apply_patch(shifted, diff)

    assert out == shifted.replace("3. Flag shell calls", "3. Flag shell calls (also `os.popen(`)")


def test_context_mismatch_names_hunk_line_and_both_texts() -> None:
    diff = patch_of("3. Flag shell calls", "3. Flag shell commands")
    drifted = SKILL.replace("3. Flag shell calls", "3. Flag subprocess calls")

    with pytest.raises(PatchError) as err:
        apply_patch(drifted, diff)

    message = str(err.value)
    assert "hunk 1 (@@ -" in message
    assert "does not apply" in message
    assert "'3. Flag shell calls" in message and "'3. Flag subprocess calls" in message
    assert "\n" not in message


def test_a_context_line_differing_only_in_trailing_space_does_not_apply() -> None:
    diff = patch_of("4. Confirm", "4. Re-check")
    with pytest.raises(PatchError):
        apply_patch(
            SKILL.replace("2. Read the file: `read <file>`.", "2. Read the file: `read <file>`. "),
            diff,
        )


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        ("just some prose, no diff at all\n", "no '--- a/SKILL.md'"),
        ("--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1,5 +1,3 @@\n a\n+b\n c\n", "cannot parse"),
    ],
)
def test_unparseable_diffs_are_one_line_errors(diff: str, expected: str) -> None:
    with pytest.raises(PatchError, match=expected) as err:
        apply_patch(SKILL, diff)
    assert "\n" not in str(err.value)


def test_diff_touching_two_files_is_refused() -> None:
    one = patch_of("4. Confirm", "4. Re-check")
    two = one + one.replace("a/SKILL.md", "a/OTHER.md").replace("b/SKILL.md", "b/OTHER.md")
    with pytest.raises(PatchError, match="touches 2 files"):
        apply_patch(SKILL, two)


def test_two_hunks_apply_in_order() -> None:
    new = SKILL.replace("Audit one file", "Audit a file").replace("- `shlex", "- Quoted `shlex")
    diff = unified_diff(SKILL, new)
    assert diff.count("@@ -") == 2
    assert apply_patch(SKILL, diff) == new


# -- signatures -----------------------------------------------------------------------------------


def test_signature_is_rule_direction_and_the_store_diff_hash() -> None:
    diff = patch_of("4. Confirm", "4. Re-check")
    assert signature("progress_mismatch", "FN", diff) == f"progress_mismatch:FN:{diff_hash(diff)}"
    assert signature("progress_mismatch", "FN", diff.replace("\n", "\r\n")) == signature(
        "progress_mismatch", "FN", diff
    )
    assert signature("progress_mismatch", "FP", diff) != signature("progress_mismatch", "FN", diff)


def test_taboo_rule_round_trip_and_bare_rule_ids() -> None:
    assert taboo_rule("tool_loop", "FN") == "tool_loop:FN"
    assert split_taboo_rule("tool_loop:FN") == ("tool_loop", "FN")
    assert split_taboo_rule("manual") == ("manual", None)
    assert split_taboo_rule("user:checker:FP") == ("user:checker", "FP")


def test_blocking_entry_matches_rule_and_direction_only() -> None:
    diff = patch_of("4. Confirm", "4. Re-check")
    entries = [
        TabooEntry("tool_loop:FP", diff_hash(diff), "guardrail", "2026-01-01T00:00:00Z"),
        TabooEntry("progress_mismatch", diff_hash(diff), "manual", "2026-01-01T00:00:00Z"),
    ]
    assert blocking_entry(entries, "tool_loop", "FP") is entries[0]
    assert blocking_entry(entries, "tool_loop", "FN") is None
    assert blocking_entry(entries, "progress_mismatch", "FN") is None  # no direction recorded
    assert same_edit(entries, diff) is entries[0]
    assert same_edit(entries, patch_of("4. Confirm", "4. Check again")) is None
