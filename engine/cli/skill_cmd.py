"""``skillsmith skill lint|render``: check SKILL.md files without a workspace."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.cli import print_json, wants_json
from engine.core.errors import FormatError, SkillsmithError, UsageError
from engine.core.lint import lint_text, reason
from engine.core.safety import Finding
from engine.core.skill import SKILL_FILE, SkillDoc, read_skill_text
from engine.evaluation.verify import verify_score


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("skill", parents=[common], help="lint and render SKILL.md files")
    actions = p.add_subparsers(dest="skill_action", metavar="ACTION", required=True)
    lint_p = actions.add_parser(
        "lint",
        parents=[common],
        help="Agent Skills spec + safety rules + verify score (exit 1 on errors)",
    )
    lint_p.add_argument(
        "paths", nargs="+", metavar="PATH", help="SKILL.md files or folders holding them"
    )
    lint_p.set_defaults(func=_lint)
    render_p = actions.add_parser("render", parents=[common], help="parse and re-render a SKILL.md")
    render_p.add_argument("paths", nargs="+", metavar="PATH", help="SKILL.md file or skill folder")
    render_p.add_argument(
        "--check", action="store_true", help="exit 1 unless the render is byte-identical"
    )
    render_p.set_defaults(func=_render)


def skill_files(paths: list[str]) -> list[Path]:
    """Expand each PATH: a file, a skill folder, or a folder searched for SKILL.md files."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            if (path / SKILL_FILE).is_file():
                files.append(path / SKILL_FILE)
                continue
            found = sorted(p for p in path.rglob(SKILL_FILE) if p.is_file())
            if not found:
                raise SkillsmithError(f"{path}: no {SKILL_FILE} in this folder")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise FormatError(path, None, "file not found")
    return files


def _lint(args: argparse.Namespace) -> int:
    reports: list[dict[str, Any]] = []
    errors = 0
    for file in skill_files(args.paths):
        try:
            text = read_skill_text(file)
            findings = lint_text(text, path=file, folder=file.parent.name)
        except FormatError as exc:
            findings, text = [Finding("file.unreadable", "error", exc.line or 1, reason(exc))], None
        verify = verify_score(text).to_dict() if text is not None else None
        n_errors = sum(1 for f in findings if f.severity == "error")
        errors += n_errors
        reports.append(
            {"path": str(file), "findings": findings, "errors": n_errors, "verify": verify}
        )
    if wants_json(args):
        print_json(
            {
                "files": [{**r, "findings": [f.to_dict() for f in r["findings"]]} for r in reports],
                "errors": errors,
            }
        )
    else:
        for r in reports:
            for finding in r["findings"]:
                print(finding.format(r["path"]))
            if r["verify"] is not None:
                failed = [i["check_id"] for i in r["verify"]["items"] if not i["passed"]]
                missing = f" (missing: {', '.join(failed)})" if failed else ""
                print(f"{r['path']}: verify score {r['verify']['score']:.0f}/100{missing}")
    return 1 if errors else 0


def _render(args: argparse.Namespace) -> int:
    files = skill_files(args.paths)
    if not args.check:
        if len(files) != 1:
            raise UsageError("skill render prints one file; give one PATH, or use --check")
        text = SkillDoc.parse(read_skill_text(files[0]), files[0]).render()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
        return 0
    results: list[dict[str, Any]] = []
    for file in files:
        doc = SkillDoc.parse(read_skill_text(file), file)  # one-line errors for unreadable files
        original = file.read_bytes()
        rendered = doc.render().encode("utf-8")
        results.append(
            {
                "path": str(file),
                "identical": rendered == original,
                "first_difference_line": _first_difference(original, rendered),
            }
        )
    if wants_json(args):
        print_json(results)
    for r in results:
        if r["identical"]:
            if not wants_json(args):
                print(f"{r['path']}: byte-identical")
        else:
            sys.stderr.write(
                f"skillsmith: {r['path']}:{r['first_difference_line']}: "
                "render differs from the file\n"
            )
    return 0 if all(r["identical"] for r in results) else 1


def _first_difference(a: bytes, b: bytes) -> int | None:
    if a == b:
        return None
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return a[:at].count(b"\n") + 1
