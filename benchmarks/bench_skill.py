"""Parse/render/edit/lint throughput of the SKILL.md model against a naive baseline.

Run by hand: ``uv run python benchmarks/bench_skill.py``. The baseline, measured in the same run on
the same texts, is the least any parser must do: ``yaml.safe_load`` of the frontmatter plus a
line split of the body. The ratios show what the lossless line model, the safety scan and the
verify score cost on top of it.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.core.lint import lint_text  # noqa: E402
from engine.core.skill import SkillDoc  # noqa: E402
from engine.evaluation.verify import verify_score  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "corpus"  # skills in real-world styles


def _texts() -> list[str]:
    texts = [p.read_bytes().decode("utf-8") for p in sorted(FIXTURES.rglob("SKILL.md"))]
    # One large skill (about 480 lines) to see how the costs grow.
    texts.append(texts[-1] + "".join(f"\n## Note {n}\n\n1. Run `tool {n}`\n" for n in range(120)))
    return texts


def _baseline(text: str) -> None:
    _, fm, body = text.split("---", 2) if text.startswith("---") else ("", "", text)
    yaml.safe_load(fm)
    re.split(r"\r\n|\r|\n", body)


def _timed(fn: Callable[[str], object], texts: list[str], rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            fn(text)
    return time.perf_counter() - start


def main() -> None:
    texts = _texts()
    rounds = 40
    base = _timed(_baseline, texts, rounds)
    cases: dict[str, Callable[[str], object]] = {
        "parse": SkillDoc.parse,
        "parse+render": lambda t: SkillDoc.parse(t).render(),
        "parse+with_section": lambda t: SkillDoc.parse(t).with_section("pitfalls", "- new"),
        "lint_text": lint_text,
        "verify_score": verify_score,
    }
    per_doc = base / (rounds * len(texts)) * 1e6
    print(f"baseline (yaml.safe_load + line split): {per_doc:.0f} µs/doc over {len(texts)} docs")
    for name, fn in cases.items():
        took = _timed(fn, texts, rounds)
        print(
            f"{name:22} {took / (rounds * len(texts)) * 1e6:8.0f} µs/doc  ratio {took / base:5.2f}x"
        )


if __name__ == "__main__":
    main()
