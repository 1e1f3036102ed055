"""The approval queue: ``candidates/<id>/`` folders waiting for a human keypress.

A candidate is a proposed full SKILL.md with its patch and the gate verdicts it earned; the patch
may also edit the skill's other text files (engine.core.folder_patch), and the folder approval
publishes is then the parent version's with those edits. Approving
publishes it through the version store and snapshots the agent state; rejecting puts its patch on
the skill's taboo list. Both are refused when what the human saw is not what is on disk (the
content hash changed) or when the skill moved on since the candidate was made (a stale parent), so
a keypress never publishes something nobody reviewed. Every decision goes to the append-only
``decisions.jsonl``, which is what :meth:`CandidateQueue.undo_last` walks back.

Like the store, a decision goes through an intent journal (``candidates/.pending.json``,
engine.core.journal), finished when the workspace is next opened if the process died half-way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.core.candidates import (
    OPEN,
    CandidateRecord,
    StatusChange,
    listing,
    load_record,
)
from engine.core.errors import FormatError, SkillsmithError
from engine.core.fsutil import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    atomic_write_yaml,
    fsync_dir,
    read_jsonl,
)
from engine.core.journal import Intent, Journal, is_leftover, remove_leftovers
from engine.core.schema import from_mapping, to_mapping
from engine.core.skill_folder import Resource
from engine.core.stamps import new_id, utc_now
from engine.core.store import SkillStore, TabooEntry, check_name, read_text
from engine.core.vault import secret_values
from engine.core.workspace import INTENT_JOURNAL, Workspace

Records = list[dict[str, Any]]
Names = list[str]  # spelled as aliases: inside CandidateQueue, ``list`` is the method
Steps = list[tuple[str, str]]

DECISIONS = "decisions.jsonl"
JOURNAL = INTENT_JOURNAL
# Decisions that set an open candidate aside without a taboo entry, and the status they leave.
_SET_ASIDE = {"dismiss": "dismissed", "supersede": "superseded"}


@dataclass
class Candidate(CandidateRecord):
    """A candidate as loaded from its folder."""

    dir: Path = field(default=Path("."), compare=False)

    def skill_text(self) -> str:
        return read_text(self.dir / "SKILL.md")

    def patch_text(self) -> str:
        return read_text(self.dir / "patch.diff")

    def gates(self) -> list[dict[str, Any]]:
        path = self.dir / "gates.json"
        if not path.exists():
            return []
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(
                path, None, f"expected a JSON list of gate verdicts ({exc})"
            ) from None
        if not isinstance(data, list) or not all(isinstance(g, dict) for g in data):
            raise FormatError(path, None, "expected a JSON list of gate verdict objects")
        return data

    def evidence(self, name: str) -> dict[str, Any]:
        """An optional ``metrics.json`` / ``provenance.json`` the proposing loop attached; the
        published version keeps them, so its figures trace back to the runs behind them."""
        path = self.dir / name
        if not path.exists():
            return {}
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise FormatError(path, None, f"expected a JSON object ({exc})") from None
        if not isinstance(data, dict):
            raise FormatError(path, None, "expected a JSON object")
        return data

    def disk_hash(self) -> str:
        """sha256 of SKILL.md + patch.diff as they are on disk now, and of the operation
        candidate.yaml names (an update edited into a delete is a different decision)."""
        return content_hash(
            (self.dir / "SKILL.md").read_bytes(),
            (self.dir / "patch.diff").read_bytes(),
            self.operation,
        )


def _from_index(record: Any, path: Path) -> Candidate | None:
    """A candidate from the listing index, which holds only records this module wrote after
    parsing and checking them (so no second check); None when the entry is not one."""
    try:
        history = [StatusChange(**h) for h in record["history"]]
        return Candidate(**{**record, "history": history}, dir=path)
    except (TypeError, KeyError):
        return None


def content_hash(skill: bytes, patch: bytes, operation: str) -> str:
    """What a person approves: the text, the patch and what approving does with them."""
    return hashlib.sha256(skill + patch + b"\0operation=" + operation.encode("utf-8")).hexdigest()


class CandidateQueue:
    """The candidates of one workspace and the decisions taken on them."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.dir = ws.candidates_dir
        self.decisions_path = self.dir / DECISIONS
        self._journal = Journal(self.dir / JOURNAL, _checked_intent)
        # What a decision did but could not finish (a snapshot refused after a publish): the
        # decision stands, and the caller shows these as warnings.
        self.warnings: list[str] = []

    # -- reading -----------------------------------------------------------------------------------
    def list(self) -> list[Candidate]:
        """Every candidate, oldest first, from the listing index (engine.core.candidates)."""
        return [self.from_record(record, self.dir / record["id"]) for record in listing(self.dir)]

    def from_record(self, record: dict[str, Any], path: Path) -> Candidate:
        """The candidate at ``path`` from its record in the listing index (read from its own
        file when the entry is not a whole record)."""
        return _from_index(record, path) or self._load(path)

    def get(self, candidate_id: str) -> Candidate:
        check_name("candidate", candidate_id)
        path = self.dir / candidate_id
        if not (path / "candidate.yaml").is_file():
            raise SkillsmithError(f"{path}: no such candidate")
        return self._load(path)

    def decisions(self) -> Records:
        return read_jsonl(self.decisions_path)

    @staticmethod
    def _load(path: Path) -> Candidate:
        record = load_record(path)
        fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
        return Candidate(**fields, dir=path)

    # -- writing -----------------------------------------------------------------------------------
    def submit(
        self,
        skill: str,
        text: str,
        patch: str,
        *,
        source: str,
        operation: str,
        status: str,
        parent_version: str | None,
        summary: str,
        gates: Records | None = None,
        delta_score: float | None = None,
        unproven: bool = False,
        root_causes: Names | None = None,
        rule_id: str | None = None,
        reason: str | None = None,
        metrics: dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
        history: Steps | None = None,
    ) -> Candidate:
        """Queue a candidate; its folder appears complete or not at all.

        ``metrics`` and ``provenance`` (optional) become the published version's metrics.json
        and provenance.json on approval, merged under the queue's own keys. ``history`` lists
        the (status, why) steps the candidate went through before it was queued (proposed, then
        what the gates made of it) and must end at ``status``; without it the history is the
        one entry ``status`` (why: the summary).
        """
        check_name("skill", skill)
        candidate_id = new_id("cand")
        target = self.dir / candidate_id
        now = utc_now()
        steps = history if history is not None else [(status, summary)]
        if not steps or steps[-1][0] != status:
            raise SkillsmithError(f"{target}: history must end at the status {status!r}")
        mapping = {
            "id": candidate_id,
            "skill": skill,
            "source": source,
            "operation": operation,
            "status": status,
            "parent_version": parent_version,
            "summary": summary,
            "delta_score": delta_score,
            "unproven": unproven,
            "reason": reason,
            "root_causes": list(root_causes or []),
            "rule_id": rule_id,
            "created_at": now,
            "history": [{"status": st, "at": now, "why": why} for st, why in steps],
            "content_hash": content_hash(text.encode("utf-8"), patch.encode("utf-8"), operation),
        }
        from_mapping(CandidateRecord, mapping, target / "candidate.yaml")  # one-line errors
        if operation != "delete":
            self._folder(skill, parent_version, patch, where=target / "patch.diff")
        with self.ws.lock(f"queue {candidate_id}"):
            stage = self.dir / f".tmp-{candidate_id}"
            atomic_write_text(stage / "SKILL.md", text)
            atomic_write_text(stage / "patch.diff", patch)
            atomic_write_json(stage / "gates.json", list(gates or []))
            if metrics is not None:
                atomic_write_json(stage / "metrics.json", metrics)
            if provenance is not None:
                atomic_write_json(stage / "provenance.json", provenance)
            atomic_write_yaml(stage / "candidate.yaml", mapping)
            fsync_dir(stage)
            stage.rename(target)
            fsync_dir(self.dir)
        return self.get(candidate_id)

    def approve(
        self, candidate_id: str, *, expected_hash: str | None = None, why: str = "approved"
    ) -> str:
        """Publish the candidate as the skill's next version and snapshot; returns the new "vN".

        A delete (curate's archive) snapshots first, then moves the skill folder into the store;
        it returns the version the skill was archived at, and undoing it moves the folder back."""
        with self.ws.lock(f"approve {candidate_id}"):
            self.recover()
            cand = self._decidable(candidate_id, expected_hash, "approve")
            if cand.status != "pending_approval":
                # only a candidate waiting for its evaluation is helped by one
                hint = " (evaluate it first: skillsmith queue eval)" * (
                    cand.status == "pending_eval"
                )
                raise SkillsmithError(
                    f"{cand.dir}: is {cand.status}; only pending_approval candidates can be "
                    f"approved{hint}"
                )
            store = SkillStore(self.ws, cand.skill)
            if cand.operation == "delete":  # curate's archive: the folder moves into the store
                current: str | None = store.archivable()
                way = f"dismiss it (skillsmith queue dismiss {cand.id})"
            else:
                # lint and the secret rules load for an approval, not for every queue listing
                from engine.core.admission import check_diff, check_skill, text_of

                skill_file, patch_file = cand.dir / "SKILL.md", cand.dir / "patch.diff"
                text, secrets = text_of(skill_file), secret_values(self.ws)
                check_skill(text, skill=cand.skill, where=skill_file, secrets=secrets)
                check_diff(patch_file.read_bytes(), where=patch_file)
                self._folder(cand.skill, cand.parent_version, cand.patch_text(), where=patch_file)
                current = store.ensure_adopted()
                way = (
                    f"re-propose it against {current} (skillsmith queue repropose {cand.id}) "
                    f"or set it aside (skillsmith queue dismiss {cand.id})"
                )
            if cand.operation == "create" and current is not None:
                raise SkillsmithError(
                    f"{cand.dir}: stale: skill '{cand.skill}' already exists (at {current})"
                )
            if cand.operation != "create" and current != cand.parent_version:
                raise SkillsmithError(
                    f"{cand.dir}: stale: made against {cand.parent_version} but skill "
                    f"'{cand.skill}' is now at {current}; {way}"
                )
            intent = self._commit(
                {
                    "op": "approve",
                    "operation": cand.operation,
                    "candidate": cand.id,
                    "skill": cand.skill,
                    "from_status": cand.status,
                    "previous_version": current,
                    "why": why,
                }
            )
            return str(intent["version"])

    def reject(
        self, candidate_id: str, *, why: str, expected_hash: str | None = None
    ) -> TabooEntry:
        """Refuse the candidate and put its patch on the skill's taboo list."""
        with self.ws.lock(f"reject {candidate_id}"):
            self.recover()
            cand = self._decidable(candidate_id, expected_hash, "reject")
            if cand.status not in OPEN:
                raise SkillsmithError(f"{cand.dir}: is already {cand.status}")
            intent = self._commit(
                {
                    "op": "reject",
                    "candidate": cand.id,
                    "skill": cand.skill,
                    "from_status": cand.status,
                    "why": why,
                }
            )
            return TabooEntry(**intent["taboo"])

    def dismiss(self, candidate_id: str, *, why: str) -> None:
        """Set an open candidate aside without judging its patch: no taboo entry, so the same
        change may come back (a stale candidate, re-proposed against the current version)."""
        self._set_aside(candidate_id, "dismiss", why)

    def record_evaluation(
        self, candidate_id: str, gate: dict[str, Any], *, passed: bool, why: str
    ) -> TabooEntry | None:
        """Settle a ``pending_eval`` candidate with the verdict of its paired evaluation.

        The verdict joins its gates.json; a candidate that proved itself moves on to
        ``pending_approval`` (a person still decides), one that did not is rejected (taboo).
        """
        with self.ws.lock(f"evaluate {candidate_id}"):
            self.recover()
            cand = self._decidable(candidate_id, None, "record an evaluation of")
            if cand.status != "pending_eval":
                raise SkillsmithError(
                    f"{cand.dir}: is {cand.status}; only pending_eval candidates are evaluated"
                )
            gates = [g for g in cand.gates() if g.get("gate") != gate.get("gate")]
            atomic_write_json(cand.dir / "gates.json", [*gates, gate])
            if not passed:
                entry = self.reject(candidate_id, why=why)
                return entry
            self._commit(
                {
                    "op": "evaluate",
                    "candidate": cand.id,
                    "skill": cand.skill,
                    "from_status": cand.status,
                    "why": why,
                }
            )
            return None

    def supersede(self, candidate_id: str, *, by: str, why: str) -> None:
        """Retire an open candidate because ``by``, a newer candidate of the same skill, carries
        its idea (online review's reconciler folded it in).

        Like a dismissal nothing goes on the taboo list: the idea lives on in ``by``. Unlike one
        it is automation's move, not a person's, so :meth:`undo_last` passes it by — the
        keypress undoes what the person last decided.
        """
        newer = self.get(by)
        if newer.id == candidate_id or newer.skill != self.get(candidate_id).skill:
            raise SkillsmithError(
                f"{self.dir / candidate_id}: only another candidate of its skill supersedes it"
            )
        self._set_aside(candidate_id, "supersede", why, by=newer.id)

    def _set_aside(self, candidate_id: str, op: str, why: str, **extra: str) -> None:
        with self.ws.lock(f"{op} {candidate_id}"):
            self.recover()
            cand = self.get(candidate_id)
            if cand.status not in OPEN:
                raise SkillsmithError(f"{cand.dir}: is already {cand.status}")
            self._commit(
                {
                    "op": op,
                    "candidate": cand.id,
                    "skill": cand.skill,
                    "from_status": cand.status,
                    "why": why,
                    **extra,
                }
            )

    def undo_last(self) -> str:
        """Revert the newest decision not yet undone; returns a one-line account of it.

        An approval is undone by rolling the skill back to the version before it (the published
        version stays in history); a rejection by putting the candidate back to its earlier
        status and taking back the taboo entry it added (an entry that was already on the list
        before the rejection stays), so an undone rejection no longer blocks its patch.
        """
        with self.ws.lock("undo"):
            self.recover()
            rows = self.decisions()
            undone = {d.get("undoes") for d in rows if d.get("action") == "undo"}
            last = next(
                (
                    d
                    for d in reversed(rows)
                    if d.get("action") not in ("undo", "evaluate", "supersede")
                    and d["id"] not in undone
                ),
                None,
            )
            if last is None:
                raise SkillsmithError(f"{self.decisions_path}: no decision to undo")
            if last["action"] == "approve":
                if last.get("previous_version") is None:
                    raise SkillsmithError(
                        f"{self.decisions_path}: approval {last['id']} created skill "
                        f"'{last['skill']}'; a creation cannot be undone here"
                    )
                now = SkillStore(self.ws, last["skill"]).current()
                if now != last["version"]:
                    raise SkillsmithError(
                        f"{self.decisions_path}: cannot undo approval {last['id']}: skill "
                        f"'{last['skill']}' moved from {last['version']} to {now} since"
                    )
            self._commit({"op": "undo", "undoes": last, "candidate": last["candidate"]})
            what = {"approve": "approval", "dismiss": "dismissal"}.get(last["action"], "rejection")
            detail = (
                f"skill '{last['skill']}' is back in {self.ws.skills_dir.name}/ at "
                f"{last['previous_version']}"
                if last.get("operation") == "delete"
                else f"skill '{last['skill']}' back at {last['previous_version']}"
                if last["action"] == "approve"
                else f"it is {last['from_status']} again"
                if last["action"] == "dismiss"
                else "its taboo entry is removed"
                if _added_taboo(last)
                else "its patch was on the taboo list before and stays there"
            )
            return f"undid the {what} of {last['candidate']}: {detail}"

    def folder_of(self, cand: Candidate) -> dict[str, Resource] | None:
        """The candidate's files beside SKILL.md: its parent version's with ``patch.diff``
        applied (engine.core.folder_patch); None when the patch edits SKILL.md alone, which
        leaves the parent's files as they are."""
        return self._folder(
            cand.skill, cand.parent_version, cand.patch_text(), where=cand.dir / "patch.diff"
        )

    # -- internals ---------------------------------------------------------------------------------
    def _folder(
        self, skill: str, parent: str | None, patch: str, *, where: Path
    ) -> dict[str, Resource] | None:
        """The patched folder, refused in one line when the patch may not apply to it, a
        changed file holds a secret (a snapshot of the published folder would refuse it) or a
        line it adds breaks a Safety rule."""
        from engine.core.admission import check_added_lines, check_resources  # on a decision
        from engine.core.folder_patch import apply_folder_patch, touches_resources  # unidiff

        if not touches_resources(patch, where=where):
            return None
        store = SkillStore(self.ws, skill)
        before = store.known_resources(parent) if parent is not None else {}
        after = apply_folder_patch(patch, before, where=where)
        changed = {rel: res for rel, res in after.items() if before.get(rel) != res}
        folder = store.skill_file.parent
        check_resources(changed, folder=folder, secrets=secret_values(self.ws))
        check_added_lines(before, after, folder=folder)
        return after

    def _decidable(self, candidate_id: str, expected_hash: str | None, verb: str) -> Candidate:
        cand = self.get(candidate_id)
        on_disk = cand.disk_hash()
        if on_disk != cand.content_hash:
            raise SkillsmithError(
                f"{cand.dir}: SKILL.md or patch.diff changed on disk after it was queued "
                f"(content_hash {cand.content_hash[:12]}, now {on_disk[:12]}); refusing to {verb}"
            )
        if expected_hash is not None and (
            len(expected_hash) < 8 or not on_disk.startswith(expected_hash)
        ):
            raise SkillsmithError(
                f"{cand.dir}: changed on disk since it was shown (shown {expected_hash[:12]}, "
                f"now {on_disk[:12]}); review it again before you {verb}"
            )
        return cand

    def _commit(self, intent: Intent) -> Intent:
        intent = {**intent, "id": new_id("dec"), "when": utc_now()}
        try:
            return self._journal.commit(intent, lambda i: self._apply(i, resuming=False))
        except SkillsmithError:
            # A refusal half-way (a hand-edited SKILL.md, a secret the snapshot will not carry)
            # is settled like a crash: finished if the publish happened, else dropped.
            with contextlib.suppress(SkillsmithError):
                self.recover()
            raise

    def _apply(self, intent: dict[str, Any], *, resuming: bool) -> dict[str, Any]:
        """Carry out or finish one decision; each step notices when it already happened."""
        cand = self.get(intent["candidate"])
        store = SkillStore(self.ws, cand.skill)
        if intent["op"] == "approve" and intent.get("operation") == "delete":
            if not store.archive_dir.is_dir():
                if resuming:  # never archived: the queue stays as it was
                    return intent
                from engine.core.snapshots import create_snapshot  # tarfile: on archive

                create_snapshot(self.ws, note=f"{cand.skill}: before archiving ({cand.id})")
                store.archive(why=f"{cand.id}: {cand.summary} ({intent['why']})")
            intent["version"] = intent["previous_version"]
            self._set_status(store, cand, intent, ["approved", "published"], intent["why"])
        elif intent["op"] == "approve":
            version = _published_by(store, intent["id"])
            if version is None:
                if resuming:  # never published: the queue stays as it was
                    return intent
                version = store.publish(
                    cand.skill_text(),
                    why=f"{cand.id}: {cand.summary} ({intent['why']})",
                    metrics={
                        **cand.evidence("metrics.json"),
                        "delta_score": cand.delta_score,
                        "unproven": cand.unproven,
                    },
                    gate_verdict={
                        "verdict": "accepted",
                        "gates": cand.gates(),
                        "why": intent["why"],
                    },
                    patch=cand.patch_text(),
                    resources=self.folder_of(cand),
                    provenance={
                        **cand.evidence("provenance.json"),
                        "source": cand.source,
                        "candidate": cand.id,
                        "decision_id": intent["id"],
                        "summary": cand.summary,
                        "root_causes": cand.root_causes,
                        "rule_id": cand.rule_id,
                    },
                )
            intent["version"] = version
            self._set_status(store, cand, intent, ["approved", "published"], intent["why"])
            note = f"{cand.skill} {version}: approved {cand.id}"
            from engine.core.snapshots import (  # tarfile: on approval
                create_snapshot,
                list_snapshots,
            )

            if not any(s.note == note for s in list_snapshots(self.ws)):
                try:
                    create_snapshot(self.ws, note=note)
                except SkillsmithError as exc:  # published all the same: say why none was taken
                    self.warnings.append(f"{cand.skill} {version} is published, but {exc}")
        elif intent["op"] == "evaluate":
            self._set_status(store, cand, intent, ["pending_approval"], intent["why"])
        elif intent["op"] in _SET_ASIDE:
            self._set_status(store, cand, intent, [_SET_ASIDE[intent["op"]]], intent["why"])
        elif intent["op"] == "reject":
            rule, patch = cand.rule_id or "manual", cand.patch_text()
            intent["taboo_added"] = not store.taboo().contains(rule, patch)
            entry = store.taboo().add(rule, patch, intent["why"])
            intent["taboo"] = to_mapping(entry)
            self._set_status(store, cand, intent, ["rejected"], intent["why"])
        else:
            self._undo(store, cand, intent)
        self._decide(intent)
        return intent

    def _undo(self, store: SkillStore, cand: Candidate, intent: dict[str, Any]) -> None:
        last = intent["undoes"]
        why = f"undo {last['action']} {last['id']}"
        if last.get("operation") == "delete":
            if store.archive_dir.is_dir():
                store.unarchive(why=why)
        elif last["action"] == "approve" and store.current() == last["version"]:
            store.rollback(last["previous_version"], why=why)
        removed = last["action"] == "reject" and _added_taboo(last)
        if removed:
            store.remove_taboo(TabooEntry(**last["taboo"]), why=why)
        self._set_status(store, cand, intent, [last["from_status"]], why)
        if not _recorded(store, "undo", intent["id"]):
            store.record(
                "undo",
                decision_id=intent["id"],
                undoes=last["id"],
                candidate=cand.id,
                action=last["action"],
                taboo_kept=last["action"] == "reject" and not removed,
            )

    @staticmethod
    def _set_status(
        store: SkillStore, cand: Candidate, intent: dict[str, Any], statuses: Names, why: str
    ) -> None:
        """Move the candidate through ``statuses`` (yaml history, then timeline), each once.

        Every decision changes the status, so a candidate already at the final status was
        written by an interrupted attempt and must not get its history entries twice.
        """
        before = intent["from_status"] if intent["op"] != "undo" else _decided(intent["undoes"])
        if cand.status != statuses[-1]:
            record = cand.record()
            now = utc_now()
            record["status"] = statuses[-1]
            record["history"] += [{"status": s, "at": now, "why": why} for s in statuses]
            if statuses[-1] in ("rejected", "superseded"):
                record["reason"] = why
            elif before == "rejected":
                record["reason"] = None
            atomic_write_yaml(cand.dir / "candidate.yaml", record)
        if not _recorded(store, "candidate", intent["id"]):
            store.record(
                "candidate",
                decision_id=intent["id"],
                candidate=cand.id,
                from_status=before,
                to_status=statuses[-1],
                why=why,
            )

    def _decide(self, intent: dict[str, Any]) -> None:
        if any(d.get("id") == intent["id"] for d in self.decisions()):
            return
        record = {k: v for k, v in intent.items() if k not in ("op", "undoes")}
        record["action"] = intent["op"]
        if intent["op"] == "undo":
            record["undoes"] = intent["undoes"]["id"]
            record["skill"] = intent["undoes"]["skill"]
        append_jsonl(self.decisions_path, record)

    # -- recovery ----------------------------------------------------------------------------------
    def _leftovers(self) -> Iterator[Path]:
        """Temp folders of an interrupted submit and temp files of interrupted yaml rewrites."""
        if not self.dir.is_dir():
            return
        for path in self.dir.iterdir():
            if is_leftover(path.name):
                yield path
            elif path.is_dir():
                yield from (p for p in path.iterdir() if is_leftover(p.name))

    def recover(self) -> None:
        """Finish a decision a killed process left half-way and drop temp folders of an
        interrupted submit. Call with the workspace lock held (engine.core.recovery does, once,
        on opening; each decision does before its own)."""
        self._journal.replay(lambda intent: self._apply(intent, resuming=True))
        remove_leftovers(self._leftovers())


_OPS = ("approve", "evaluate", "reject", *_SET_ASIDE, "undo")  # every decision _apply carries out


def _checked_intent(journal: Path, intent: Any) -> Intent:
    """A pending decision read back as untrusted input before it is replayed unattended."""

    def bad(field: str, expected: str) -> FormatError:
        return FormatError(journal, field, expected + "; remove the file if you did not write it")

    if not isinstance(intent, dict) or intent.get("op") not in _OPS:
        raise bad("op", f"expected one of {', '.join(_OPS)}")
    if intent.get("operation") not in (None, "update", "create", "delete"):
        raise bad("operation", "expected update, create or delete")
    candidate = intent.get("candidate")
    if not isinstance(candidate, str):
        raise bad("candidate", "expected a candidate id")
    try:
        check_name("candidate", candidate)
    except SkillsmithError as exc:  # as a FormatError a planted journal stops opening, in one line
        raise bad("candidate", str(exc)) from None
    if not isinstance(intent.get("id"), str) or not isinstance(intent.get("why", ""), str):
        raise bad("id", "expected the decision's id and reason as text")
    undoes = intent.get("undoes")
    if intent["op"] == "undo" and not (
        isinstance(undoes, dict)
        and undoes.get("action") in ("approve", "reject", "dismiss")
        and undoes.get("candidate") == candidate
    ):
        raise bad("undoes", "expected the decision being undone, of the same candidate")
    return intent


def _decided(decision: dict[str, Any]) -> str:
    """The status a decision left its candidate in."""
    return {"approve": "published", "dismiss": "dismissed"}.get(decision["action"], "rejected")


def _added_taboo(decision: dict[str, Any]) -> bool:
    """Whether a rejection put its taboo entry on the list rather than finding it there (older
    decisions, and one resumed after a crash mid-way, do not say: their entry stays)."""
    return decision.get("action") == "reject" and decision.get("taboo_added") is True


def _recorded(store: SkillStore, op: str, decision_id: str) -> bool:
    return any(t.get("op") == op and t.get("decision_id") == decision_id for t in store.timeline())


def _published_by(store: SkillStore, decision_id: str) -> str | None:
    for info in reversed(store.versions()):
        prov = json.loads((info.path / "provenance.json").read_bytes())
        if prov.get("decision_id") == decision_id:
            return info.version
    return None


__all__ = ["Candidate", "CandidateQueue", "CandidateRecord", "StatusChange", "content_hash"]
