"""Trace-parser throughput and compression on large generated transcripts.

Run by hand: ``uv run python benchmarks/bench_traces.py [--mb 20] [--repeat 3]``.

For each format (the session JSONL, a Claude Code on-disk transcript) it writes a transcript of
about ``--mb`` megabytes, then times, in the same run:

* baseline — plain ``json.loads`` of every line of the same file (the floor any reader pays);
* parse    — ``load_trace`` (detection, merging by message id, pairing tool results);
* summary  — ``load_trace`` + ``summarise`` (the three layers, rendered to JSON).

It prints MB/s for each, the parser's cost relative to the baseline, and the compression ratio
of the summary (raw bytes : summary bytes; the article's target is about 100:1).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from engine.core.skill import SkillDoc, Step
from engine.evaluation.traces import load_trace, summarise

SKILL = """---
name: vuln-audit
description: Audit an endpoint for vulnerabilities.
---

# Audit

## Steps

1. Locate the entry points with `grep -rn "@PostMapping" src`.
2. Read the controller with `sed -n 1,200p src/PayController.java`.
3. Trace the call chain with `grep -rn "ServiceImpl" src/main/java`.
4. Check ownership with `grep -rn checkOwner src`.
"""
COMMANDS = [
    'grep -rn "@PostMapping" src',
    "sed -n 1,200p src/PayController.java",
    "grep -rn checkOwner src",
]
BODY = "    public void grant(Long campId, Long userId) { rewardService.grant(campId, userId); }\n"


def _calls(n: int) -> Iterator[tuple[str, str, str, bool]]:
    for i in range(n):
        if i < len(COMMANDS):
            yield "Bash", COMMANDS[i], BODY * 20, False
        elif i % 7 == 0:
            yield "Grep", f"pattern{i % 50} src", f"src/F{i}.java:{i}: match\n" * 30, False
        elif i % 31 == 0:
            yield "Bash", "python scan.py", "Traceback: boom", True
        else:
            yield "Read", f"src/main/java/pay/File{i % 400:03d}.java", BODY * 40, False


def write_session(path: Path, target: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "content": "Audit PayController."}) + "\n")
        size = 0
        for i, (name, args, result, is_error) in enumerate(_calls(10**9)):
            if size >= target:
                break
            call = {"id": f"t{i}", "name": name, "args": args}
            lines = [
                {"type": "assistant", "content": f"Looking at {args}", "tool_calls": [call]},
                {
                    "type": "tool",
                    "tool_name": name,
                    "tool_call_id": f"t{i}",
                    "result": result,
                    "is_error": is_error,
                },
            ]
            for line in lines:
                text = json.dumps(line) + "\n"
                fh.write(text)
                size += len(text)
        final = {"type": "assistant", "content": "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"}
        fh.write(json.dumps(final) + "\n")
        fh.write(json.dumps({"type": "result", "tokens": {"input": 280000, "output": 9000}}) + "\n")


def _claude_line(kind: str, message: dict[str, Any], uuid: str) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/pay",
        "sessionId": "4f35e220-c435-4cf7-b9b9-f40426042847",
        "version": "2.1.49",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": "2026-02-22T21:58:00Z",
    }


def write_claude(path: Path, target: int) -> None:
    usage = {"input_tokens": 300, "cache_read_input_tokens": 12000, "output_tokens": 200}
    with path.open("w", encoding="utf-8") as fh:
        first = _claude_line("user", {"role": "user", "content": "Audit PayController."}, "u0")
        fh.write(json.dumps(first) + "\n")
        size = 0
        for i, (name, args, result, is_error) in enumerate(_calls(10**9)):
            if size >= target:
                break
            mid = f"msg_{i:06d}"
            tool_input = {"command": args} if name == "Bash" else {"file_path": args}
            blocks = [
                {"type": "text", "text": f"Looking at {args}"},
                {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": tool_input},
            ]
            lines = [  # one assistant line per content block, sharing message.id and usage
                _claude_line(
                    "assistant",
                    {"id": mid, "role": "assistant", "content": [b], "usage": usage},
                    f"a{i}-{n}",
                )
                for n, b in enumerate(blocks)
            ]
            res: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": f"toolu_{i}",
                "content": result,
            }
            if is_error:
                res["is_error"] = True
            lines.append(_claude_line("user", {"role": "user", "content": [res]}, f"u{i}"))
            for line in lines:
                text = json.dumps(line) + "\n"
                fh.write(text)
                size += len(text)
        final = {
            "id": "msg_final",
            "role": "assistant",
            "content": [{"type": "text", "text": "STEPS DONE: 1, 2, 3, 4\nVERDICT: safe"}],
            "usage": usage,
        }
        fh.write(json.dumps(_claude_line("assistant", final, "final")) + "\n")


def plain_json(path: Path) -> int:
    count = 0
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                json.loads(raw)
                count += 1
    return count


def summary_of(path: Path, steps: list[Step]) -> dict[str, Any]:
    return summarise(load_trace(path), steps).to_dict()


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="transcript size per format")
    parser.add_argument("--repeat", type=int, default=3, help="timing repetitions (best kept)")
    args = parser.parse_args()
    steps = SkillDoc.parse(SKILL).steps
    target = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, writer in (("session", write_session), ("claude-transcript", write_claude)):
            path = Path(tmp) / f"{fmt}.jsonl"
            writer(path, target)
            mb = path.stat().st_size / 1_000_000
            t_json = best_of(args.repeat, partial(plain_json, path))
            t_parse = best_of(args.repeat, partial(load_trace, path))
            t_sum = best_of(args.repeat, partial(summary_of, path, steps))
            summary = summary_of(path, steps)
            assert summary["format"] == fmt, summary["format"]
            print(f"{fmt}: {mb:.1f} MB, {summary['tool_calls_total']} tool calls")
            print(f"  plain json.loads      {mb / t_json:8.1f} MB/s  (baseline)")
            print(
                f"  load_trace            {mb / t_parse:8.1f} MB/s  "
                f"({t_parse / t_json:.2f}× the baseline time)"
            )
            print(
                f"  load_trace+summarise  {mb / t_sum:8.1f} MB/s  "
                f"({t_sum / t_json:.2f}× the baseline time)"
            )
            print(
                f"  summary {summary['summary_bytes'] / 1000:.1f} KB, "
                f"compression {summary['compression_ratio']:.0f}:1, "
                f"steps evidenced {summary['steps_evidenced']} of claimed "
                f"{summary['steps_claimed']}"
            )


if __name__ == "__main__":
    main()
