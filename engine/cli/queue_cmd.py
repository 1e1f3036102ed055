"""``skillsmith queue``: list candidates; approve, reject, evaluate, show, re-propose a stale one,
dismiss, or undo a decision."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from engine.cli import (
    budget_of,
    budget_options,
    dry_run_option,
    executor_options,
    print_json,
    wants_json,
    workspace_of,
)
from engine.core.candidates import COLUMN, Record, behind, listing, rows
from engine.core.errors import check_counts

if TYPE_CHECKING:
    from engine.core.queue import Candidate, CandidateQueue

# The listing imports none of the queue's decision machinery (engine.core.queue, the store, the
# gates): at thousands of candidates loading it cost more than listing them. The actions import
# it when they run.

# Where a listing line's parts sit in a head of the listing index (engine.core.candidates.rows).
ID, STATUS, SKILL, OPERATION, PARENT, LINE, BRIEF = (
    COLUMN[name]
    for name in ("id", "status", "skill", "operation", "parent_version", "line", "brief")
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "queue",
        parents=[common],
        help="list candidates; approve / reject / evaluate / repropose / dismiss / undo",
    )
    p.set_defaults(func=_list)
    actions = p.add_subparsers(dest="queue_action", metavar="ACTION")

    a = actions.add_parser("show", parents=[common], help="a candidate's fields, gates and patch")
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.set_defaults(func=_show)

    a = actions.add_parser("approve", parents=[common], help="publish a candidate (+ snapshot)")
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.add_argument("--why", default="approved", help="reason, kept in the audit log")
    a.add_argument("--expect", metavar="HASH", help="refuse unless the content hash starts so")
    a.set_defaults(func=_approve)

    a = actions.add_parser("reject", parents=[common], help="reject a candidate (→ taboo list)")
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.add_argument("--why", required=True, help="reason, kept with the taboo entry")
    a.add_argument("--expect", metavar="HASH", help="refuse unless the content hash starts so")
    a.set_defaults(func=_reject)

    a = actions.add_parser(
        "eval", parents=[common], help="paired evaluation of a pending_eval candidate vs its parent"
    )
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.add_argument("--bench", metavar="B", help="benchmark id (default: the candidate's own)")
    a.add_argument("--runs", type=int, help="runs per case (default: the benchmark's)")
    a.add_argument("-j", "--jobs", type=int, help="parallel agent runs (default: CPU count)")
    a.add_argument(
        "--seed",
        type=int,
        help="fix every evaluation's seed, so the same command repeats draw for draw "
        "(default: fresh seeds)",
    )
    budget_options(a)
    dry_run_option(a)
    executor_options(a)
    a.set_defaults(func=_evaluate)

    a = actions.add_parser(
        "repropose",
        parents=[common],
        help="a stale candidate's patch on the current version, gated as a new candidate",
    )
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.set_defaults(func=_repropose)

    a = actions.add_parser(
        "dismiss", parents=[common], help="set an open candidate aside (no taboo entry)"
    )
    a.add_argument("id", metavar="ID", help="the candidate (cand-…; `skillsmith queue` lists them)")
    a.add_argument("--why", help="reason, kept in its history (default: why it is stale)")
    a.set_defaults(func=_dismiss)

    a = actions.add_parser(
        "undo", parents=[common], help="revert the last approve, reject or dismiss"
    )
    a.set_defaults(func=_undo)


def _queue(args: argparse.Namespace) -> CandidateQueue:
    from engine.core.queue import CandidateQueue

    ws = workspace_of(args)
    ws.load_config()  # a broken skillsmith.yaml is reported before anything is touched
    return CandidateQueue(ws)


def _row(c: Candidate) -> dict[str, Any]:
    return _json_row(c.record(), str(c.dir))


def _json_row(record: Record, folder: str) -> dict[str, Any]:
    return {**record, "dir": folder}


def _list(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    config = ws.load_config()  # a broken skillsmith.yaml is reported before anything is touched
    # With gates.approval_timeout_s set, what waited too long is decided before it is shown
    # (unset, the default, the sweep's module is not even loaded).
    timeout = config.gates.approval_timeout_s
    if timeout is not None:
        from engine.evaluation.gates.expiry import expire_pending

        for cand_id, what in expire_pending(ws, timeout):
            sys.stderr.write(f"approval timeout: {cand_id} {what}\n")
    # A candidate.yaml that cannot be read is named on stderr (and the exit is 1) while every
    # other candidate is still listed: one bad file does not hide the queue.
    unreadable: list[str] = []
    if wants_json(args):
        where = str(ws.candidates_dir)
        found = listing(ws.candidates_dir, unreadable)
        print_json([_json_row(r, f"{where}/{r['id']}") for r in found])
        return _unreadable(unreadable)
    heads = rows(ws.candidates_dir, unreadable)
    if not heads and not unreadable:
        print("no candidates")
    current: dict[str, str | None] = {}  # one look at each skill's current version
    lines = []
    for head in heads:
        stale = behind(ws, head[SKILL], head[OPERATION], head[STATUS], head[PARENT], current)
        if stale is None:
            lines.append(f"{head[LINE]}  {head[BRIEF]}\n")
        else:
            flag = f" stale (skill at {stale}: queue repropose {head[ID]})"
            lines.append(f"{head[LINE]}{flag}  {head[BRIEF]}\n")
    sys.stdout.write("".join(lines))
    return _unreadable(unreadable)


def _unreadable(errors: list[str]) -> int:
    for error in errors:
        sys.stderr.write(f"skillsmith: error: {error}\n")
    return 1 if errors else 0


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
    from engine.core.store import SkillStore

    queue = _queue(args)
    version = queue.approve(args.id, expected_hash=args.expect, why=args.why)
    cand = queue.get(args.id)
    if wants_json(args):
        print_json({"id": cand.id, "skill": cand.skill, "version": version, "status": cand.status})
    elif cand.operation == "delete":
        print(
            f"approved {cand.id}: {cand.skill} ({version}) is archived into "
            f"{SkillStore(queue.ws, cand.skill).archive_dir}, a snapshot taken first; "
            "queue undo brings it back"
        )
    else:
        print(f"approved {cand.id}: {cand.skill} is now at {version}")
    for warning in queue.warnings:
        print(f"warning: {warning}", file=sys.stderr)
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
    from engine.cli.progress import RESUME_WITH_MORE_BUDGET, show_plan
    from engine.core.budget import BudgetReached
    from engine.evaluation.gates.queued import evaluate_queued, plan_queued

    check_counts(("--runs", args.runs), ("-j", args.jobs))
    queue = _queue(args)
    found = plan_queued(queue.ws, args.id, bench=args.bench, runs=args.runs, jobs=args.jobs)
    if show_plan(args, found):
        return 0
    budget = budget_of(args)
    try:
        done = evaluate_queued(
            queue.ws,
            args.id,
            bench=args.bench,
            runs=args.runs,
            jobs=args.jobs,
            budget=budget,
            seed=args.seed,
        )
    except BudgetReached as stopped:  # nothing decided: the candidate stays pending_eval
        if wants_json(args):
            print_json(
                {
                    "id": args.id,
                    "status": "pending_eval",
                    "stopped": "budget",
                    "reason": stopped.reason,
                    "spent": stopped.spent,
                    "budget": stopped.budget,
                }
            )
        else:
            print(f"{args.id}: stopped: budget ({stopped.reason}); nothing was decided")
            print(RESUME_WITH_MORE_BUDGET)
        return 1
    if wants_json(args):
        print_json(
            {
                "id": args.id,
                "status": done.status,
                "bench": done.bench,
                "run_ids": done.run_ids,
                "verdict": done.verdict.to_dict(),
                "targets": done.targets,
                "guardrail": None if done.guardrail is None else done.guardrail.to_dict(),
                "screening": None if done.screening is None else done.screening.to_dict(),
                "broad": None if done.broad is None else done.broad.to_dict(),
                "extra_runs": done.extra_runs,
                "cost": None if done.cost is None else done.cost.to_json(),
            }
        )
    else:
        print(f"{args.id}: {done.line()} → {done.status}")
    return 0


def _repropose(args: argparse.Namespace) -> int:
    from engine.evaluation.gates.stale import repropose

    ws = _queue(args).ws
    new, decision = repropose(ws, args.id)
    if wants_json(args):
        print_json({"id": args.id, "status": "dismissed", "new": _row(new)})
    else:
        reason = f" ({decision.reason})" if decision.reason else ""
        print(
            f"re-proposed {args.id} against {new.parent_version} as {new.id}: "
            f"{new.status}{reason}; {args.id} is dismissed"
        )
        if new.status == "pending_eval":
            print(f"next: skillsmith queue eval {new.id}")
        elif new.status == "pending_approval":
            print(
                f"next: skillsmith queue show {new.id}, then skillsmith queue approve {new.id} "
                '--why "<your reason>" (unproven: the old evidence was against '
                f"{args.id}'s parent)"
            )
    return 0


def _dismiss(args: argparse.Namespace) -> int:
    from engine.evaluation.gates.stale import dismiss

    why = dismiss(_queue(args).ws, args.id, args.why)
    if wants_json(args):
        print_json({"id": args.id, "status": "dismissed", "why": why})
    else:
        print(f"dismissed {args.id} ({why}); no taboo entry; queue undo brings it back")
    return 0


def _undo(args: argparse.Namespace) -> int:
    message = _queue(args).undo_last()
    if wants_json(args):
        print_json({"undone": message})
    else:
        print(message)
    return 0
