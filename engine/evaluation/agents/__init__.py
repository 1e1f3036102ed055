"""How a target agent is launched: a sealed run directory, a scrubbed environment, one process
group that is always cleaned up, and its output turned into a session (see kinds.py)."""

from engine.evaluation.agents.isolation import (
    ANSWER_FILE,
    HARNESS_NAMES,
    PROMPT_FILE,
    RoomSpec,
    SkillFiles,
    build_room,
    check_statement,
    compose_prompt,
    remove_room,
    room_env,
    scratch_root,
    sweep_rooms,
)
from engine.evaluation.agents.kinds import Agent, AgentOutcome, make_agent
from engine.evaluation.agents.process import ProcessResult, run_process, survivors
from engine.evaluation.agents.sessions import OutputError, parse_claude_stream, parse_session_jsonl

__all__ = [
    "ANSWER_FILE",
    "HARNESS_NAMES",
    "PROMPT_FILE",
    "Agent",
    "AgentOutcome",
    "OutputError",
    "ProcessResult",
    "RoomSpec",
    "SkillFiles",
    "build_room",
    "check_statement",
    "compose_prompt",
    "make_agent",
    "parse_claude_stream",
    "parse_session_jsonl",
    "remove_room",
    "room_env",
    "run_process",
    "scratch_root",
    "survivors",
    "sweep_rooms",
]
