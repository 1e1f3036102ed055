"""``skillsmith queue``: list candidates; approve, reject, evaluate, show or undo a decision."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.cli import print_json, wants_json, workspace_of
from engine.core.errors import check_counts
from engine.core.queue import Candidate, CandidateQueue
from engine.evaluation.gates.expiry import sweep_expired


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "queue", parents=[common], help="list candidates; approve / reject / evaluate / undo"
    )
    p.set_defaults(func=_list)
    actions = p.add_subparsers(dest="queue_action", metavar="ACTION")

    a = actions.add_parser("show", parents=[common], help="a candidate's fields, gates and patch")
    a.add_argument("id")
    a.set_defaults(func=_show)

    a = actions.add_parser("approve", parents=[common], help="publish a candidate (+ snapshot)")
    a.add_argument("id")
    a.add_argument("--why", default="approved", help="reason, kept in the audit log")
    a.add_argument("--expect", metavar="HASH", help="refuse unless the content hash starts so")
    a.set_defaults(func=_approve)

    a = actions.add_parser("reject", parents=[common], help="reject a candidate (→ taboo list)")
    a.add_argument("id")
    a.add_argument("--why", required=True, help="reason, kept with the taboo entry")
    a.add_argument("--expect", metavar="HASH", help="refuse unless the content hash starts so")
    a.set_defaults(func=_reject)

    a = actions.add_parser(
        "eval", parents=[common], help="paired evaluation of a pending_eval candidate vs its parent"
    )
    a.add_argument("id")
    a.add_argument("--bench", metavar="B", help="benchmark id (default: the candidate's own)")
    a.add_argument("--runs", type=int, help="runs per case (default: the benchmark's)")
    a.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    a.set_defaults(func=_evaluate)

    a = actions.add_parser("undo", parents=[common], help="revert the last approve or reject")
    a.set_defaults(func=_undo)


def _queue(args: argparse.Namespace) -> CandidateQueue:
    ws = workspace_of(args)
    ws.load_config()  # a broken skillsmith.yaml is reported before anything is touched
    return CandidateQueue(ws)


def _row(c: Candidate) -> dict[str, Any]:
    return {**c.record(), "dir": str(c.dir)}


def _list(args: argparse.Namespace) -> int:
    queue = _queue(args)
    # With gates.approval_timeout_s set, what waited too long is decided before it is shown.
    for cand_id, what in sweep_expired(queue.ws):
        sys.stderr.write(f"approval timeout: {cand_id} {what}\n")
    found = queue.list()
    if wants_json(args):
        print_json([_row(c) for c in found])
        return 0
    if not found:
        print("no candidates")
    for c in found:
        delta = "" if c.delta_score is None else f"{c.delta_score:+.3f}"
        flag = " unproven" if c.unproven else ""
        print(
            f"{c.id}  {c.status:<16} {c.skill:<20} {c.operation:<6} "
            f"{c.parent_version or '-':<5} {delta:>7} {c.content_hash[:12]}{flag}  {c.summary}"
        )
    return 0


def _show(args: argparse.Namespace) -> int:
    cand = _queue(args).get(args.id)
    if wants_json(args):
        print_json({**_row(cand), "gates": cand.gates(), "patch": cand.patch_text()})
        return 0
    for key, value in cand.record().items():
        if key != "history":
            print(f"{key}: {value}")
    for gate in cand.gates():
        print(
            f"gate {gate.get('gate')}: {gate.get('verdict')}  {'; '.join(gate.get('reasons', []))}"
        )
    print(cand.patch_text(), end="")
    return 0


def _approve(args: argparse.Namespace) -> int:
    queue = _queue(args)
    version = queue.approve(args.id, expected_hash=args.expect, why=args.why)
    cand = queue.get(args.id)
    if wants_json(args):
        print_json({"id": cand.id, "skill": cand.skill, "version": version, "status": cand.status})
    else:
        print(f"approved {cand.id}: {cand.skill} is now at {version}")
    return 0


def _reject(args: argparse.Namespace) -> int:
    queue = _queue(args)
    entry = queue.reject(args.id, why=args.why, expected_hash=args.expect)
    if wants_json(args):
        print_json(
            {"id": args.id, "taboo": {"rule_id": entry.rule_id, "diff_hash": entry.diff_hash}}
        )
    else:
        print(f"rejected {args.id}; taboo entry {entry.rule_id} {entry.diff_hash}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from engine.evaluation.gates.queued import evaluate_queued

    check_counts(("--runs", args.runs), ("-j", args.jobs))
    queue = _queue(args)
    done = evaluate_queued(queue.ws, args.id, bench=args.bench, runs=args.runs, jobs=args.jobs)
    if wants_json(args):
        print_json(
            {
                "id": args.id,
                "status": done.status,
                "bench": done.bench,
                "run_ids": done.run_ids,
                "verdict": done.verdict.to_dict(),
            }
        )
    else:
        print(f"{args.id}: {done.verdict.line()} → {done.status}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    message = _queue(args).undo_last()
    if wants_json(args):
        print_json({"undone": message})
    else:
        print(message)
    return 0
