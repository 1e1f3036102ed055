"""What the offline proposer learns from missed positives besides input flow: a step's own
construct with a new word, a PHP method whatever its receiver is called, and guards that are
not the flagged call itself.

Plain string work over a few lines of code each; every pattern is also run through the real
``grep -E`` the demo agent uses, since a pattern Python matches but grep reads otherwise would
fix nothing.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from engine.core.skill import SkillDoc
from engine.evaluation.patches.material import CaseMaterial, CodeLine
from engine.evaluation.patches.mining import (
    analogies,
    flag_matchers,
    fn_patterns,
    grep_command,
    word_slots,
)
from engine.evaluation.patches.offline_proposer import OfflineProposer, flagged_by

SKILL = """---
name: audit
description: Audit a file.
---

## Steps

1. Flag hard-coded secrets and weak hashes: `grep -niE \
"(password|secret|api_?key)\\s*=\\s*[\\"']|md5|sha1" *.go *.js *.java`
2. Confirm: re-read the file, `read -n <file>`, and drop every hit the Pitfalls rule out.

## Pitfalls

- A query with `?` placeholders is parameterised — not a finding.
"""


def case_of(case_id: str, path: str, code: str) -> CaseMaterial:
    lines = tuple(CodeLine(path, n, text) for n, text in enumerate(code.splitlines(), 1))
    return CaseMaterial(case_id, "vulnerable", "FN", None, lines)


def grep_hits(pattern: str, text: str, tmp_path: Path) -> bool:
    target = tmp_path / "f.txt"
    target.write_text(text + "\n")
    run = subprocess.run(["grep", "-E", "-e", pattern, str(target)], capture_output=True)
    return run.returncode == 0


def test_a_step_s_word_group_meets_a_missed_secret_constant(tmp_path: Path) -> None:
    doc, _ = SkillDoc.parse_lenient(SKILL)
    go = case_of("secret-go", "notify.go", 'const webhookToken = "changeme-demo-token"\n')
    found = analogies(doc, [go], negatives=['token := os.Getenv("TOKEN")'])
    pattern = "(token|Token|TOKEN)\\s*=\\s*[\"']"
    assert pattern in found
    assert found[pattern].cases == {"secret-go"}
    assert {"*.go", "*.js", "*.java"} <= found[pattern].files
    # the step was -i; the new step's grep is not, so every spelling a -i grep matches is there
    assert grep_hits(pattern, 'const billingToken = "changeme-billing-token"', tmp_path)
    assert grep_hits(pattern, 'API_TOKEN = "x"', tmp_path)
    assert not grep_hits(pattern, 'token := os.Getenv("TOKEN")', tmp_path)


def test_a_bare_word_needs_two_missed_literals_and_no_negative() -> None:
    doc, _ = SkillDoc.parse_lenient(SKILL)
    js = case_of(
        "des-js", "vault.js", 'const cipher = crypto.createCipheriv("des-ecb", key, null);'
    )
    java = case_of("des-java", "V.java", 'Cipher c = Cipher.getInstance("DES/ECB/PKCS5Padding");')
    both = analogies(doc, [js, java], negatives=[])
    assert both["\\b(des|Des|DES)\\b"].cases == {"des-js", "des-java"}
    # one file is not enough for a word with no context around it
    assert "\\b(des|Des|DES)\\b" not in analogies(doc, [js], negatives=[])
    # nor is a word a negative case has
    said = analogies(doc, [js, java], negatives=['log("des is off")', "x = des.mode"])
    assert "\\b(des|Des|DES)\\b" not in said
    # identifiers never fill a bare slot: only the literal's first word does
    assert not any("cipher" in p.lower() or "crypto" in p.lower() for p in both)


def test_word_slots_keep_the_construct_around_a_group() -> None:
    slots = list(word_slots("(password|secret)\\s*=\\s*[\"']|md5|sha1\\(|x(a|b)y"))
    assert ("", "\\s*=\\s*[\"']", False) in slots
    assert ("\\b", "\\b", True) in slots  # md5
    assert ("x", "y", False) in slots
    assert len(slots) == 3  # ``sha1\\(`` is no plain word
    # a word learnt before (its spellings in a group, bounded) is a bare word again
    assert list(word_slots("\\b(des|Des|DES)\\b|x")) == [("\\b", "\\b", True), ("\\b", "\\b", True)]


def test_a_php_method_is_learnt_for_any_receiver(tmp_path: Path) -> None:
    code = (
        "<?php\n"
        "$id = $_GET['id'];\n"
        '$result = $db->query("SELECT name FROM items WHERE id = " . $id);\n'
    )
    mined = fn_patterns([case_of("sqli-php", "item.php", code)], ["$_GET"])
    built = "\\$\\w+->query\\(.*\\. *\\$"
    assert built in mined
    assert not any("db" in p for p in mined)
    other = '$rows = $conn->query("SELECT id FROM users WHERE email = \'" . $email . "\'");'
    assert re.search(built, other) and grep_hits(built, other, tmp_path)


def test_the_flagged_call_is_the_guard_only_when_the_line_has_no_other() -> None:
    sink = re.compile(r"\w\(([A-Za-z_$][A-Za-z0-9_$]*(\.|->))?(req\.body|req\.query)")
    line = "const cart = JSON.parse(Buffer.from(req.body.cart, 'base64').toString());"
    assert flagged_by("Buffer.from(", line, [sink])
    assert not flagged_by("JSON.parse(", line, [sink])
    assert not flagged_by("absent(", line, [sink])

    proposer = OfflineProposer(None, seed=7)
    positives = ["return profile.toString();"]  # a call the vulnerable files share is no guard
    assert proposer._guards([line], positives, [sink]) == ("JSON.parse(",)
    php = re.compile(r"\w\(([A-Za-z_$][A-Za-z0-9_$]*(\.|->))?(\$_GET)")
    served = "readfile('/var/invoices/' . basename($_GET['invoice']) . '.pdf');"
    # the vulnerable files call readfile( too: basename( is the one guard this line has
    assert proposer._guards([served], ["readfile($_GET['f']);"], [php]) == ("basename(",)


def test_a_new_step_reads_back_as_the_patterns_it_was_built_from() -> None:
    patterns = ["(token|Token|TOKEN)\\s*=\\s*[\"']", "\\$\\w+->query\\(", "\\b(des|Des|DES)\\b"]
    doc, _ = SkillDoc.parse_lenient(
        SKILL.replace(
            "2. Confirm", f"2. Flag these: `{grep_command(patterns, '*.go *.php')}`\n3. Confirm"
        )
    )
    matcher = flag_matchers(doc)[-1]
    assert matcher.regex.pattern == "|".join(patterns)
    assert matcher.operands == ("*.go", "*.php")
