"""The offline proposer learns constructs, not the noise of the cases it mined.

A Pitfalls rule is written from a few failing cases; one that names their raw tokens (``,))``,
a variable of the file) fits those cases only and fails on the next. So a guard token must name
a function or API the file calls without defining it, or a keyword argument / option.
"""

from __future__ import annotations

import re

import pytest

from engine.patches.material import CaseMaterial, CodeLine
from engine.patches.mining import generalises, own_names
from engine.patches.offline_proposer import guard_tokens

SQL_CASE = CaseMaterial(
    case_id="sqli-py-tuple",
    label="safe",
    outcome="FP",
    case_type="sqli",
    lines=tuple(
        CodeLine("app.py", n, text)
        for n, text in enumerate(
            [
                "def find(cur, user_id):",
                '    query = "SELECT * FROM t WHERE id = %s"',
                '    cur.execute("SELECT * FROM t WHERE id = %s", (user_id,))',
                "    safe_name = os.path.basename(user_id)",
                "    digest = hashlib.md5(body, usedforsecurity=False)",
            ],
            start=1,
        )
    ),
)


def test_the_names_a_file_makes_up_are_its_own() -> None:
    own = own_names(SQL_CASE)
    assert {"find", "cur", "user_id", "query", "safe_name", "digest"} <= own
    assert not own & {"execute", "basename", "md5", "usedforsecurity"}


@pytest.mark.parametrize(
    "token",
    ["basename(", "os.path.basename(", "shlex.quote(", "yaml.SafeLoader", "SafeLoader",
     "usedforsecurity=False", "Loader=yaml.SafeLoader", "allowed_classes", "execute("],
)  # fmt: skip
def test_functions_apis_and_flags_generalise(token: str) -> None:
    assert generalises(token, own_names(SQL_CASE))


@pytest.mark.parametrize(
    "token",
    [",))", '%s", (', "= %", "SELECT", "root", "cur.execute(", "user_id", "safe_name", "find("],
)
def test_punctuation_words_and_the_files_own_names_do_not(token: str) -> None:
    assert not generalises(token, own_names(SQL_CASE))


def test_a_false_alarm_offers_only_its_constructs_as_guards() -> None:
    own = own_names(SQL_CASE)
    sink = [re.compile(r"execute\(")]
    line = SQL_CASE.lines[2].text
    assert guard_tokens(line, [], sink, own) == set()  # nothing but raw tokens: no rule at all
    tokens = guard_tokens(SQL_CASE.lines[4].text, ["md5(password)"], [re.compile(r"md5")], own)
    assert "usedforsecurity=False" in tokens
    assert all(generalises(t, own) for t in tokens) and "digest" not in tokens
