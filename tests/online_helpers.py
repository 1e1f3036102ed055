"""Helpers of the online-learning, curation and trigger tests: data files and a model reviewer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from engine.core.config import ModelConfig
from engine.core.workspace import Workspace
from engine.evaluation.llm import AnthropicLLM
from engine.loops.online import ModelReviewer
from tests.candidate_helpers import add_skill, skill_text
from tests.llm_server import MessagesServer

DATA = Path(__file__).parent / "data" / "online"
CLAUDE = DATA / "weather.claude.jsonl"
CLAUDE_FOLLOWUP = DATA / "weather.claude.followup.jsonl"
PLAIN = DATA / "weather.session.jsonl"
KEY = "sk-ant-api03-OnlineREVIEWkey0123456789abcdefXYZ"

WEATHER_STEPS = (
    "Geocode each city and keep its coordinates and time zone.",
    "Fetch the forecast for each city; retry only the cities that failed.",
    "Check that every requested city is in the report.",
)


def add_weather_skill(ws: Workspace) -> None:
    """The generic "Weather - Multi-City" skill the count-specific proposals must fold into."""
    add_skill(
        ws,
        "weather-multi-city",
        skill_text(
            "Weather - Multi-City",
            description="Collect current weather for several cities into one report.",
            when_to_use="- A report needs the weather of more than one city.",
            steps=WEATHER_STEPS,
        ),
    )


def copy_session(source: Path, folder: Path) -> Path:
    """A private copy of a data transcript (tests append to it)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    shutil.copyfile(source, target)
    return target


def append(path: Path, extra: Path) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(extra.read_text(encoding="utf-8"))


def model_reviewer(server: MessagesServer, **cfg: Any) -> ModelReviewer:
    """The reviewer on the real anthropic SDK, pointed at the local Messages-API server."""
    model_cfg = ModelConfig(
        provider="anthropic", model="claude-sonnet-4-6", timeout_s=10.0, max_retries=0
    )
    for name, value in cfg.items():
        setattr(model_cfg, name, value)
    return ModelReviewer(AnthropicLLM(model_cfg, api_key=KEY, base_url=server.url))


def decision(**parts: Any) -> str:
    """A reviewer reply: the decision JSON with the given lists (skills, updates, deletions)."""
    body: dict[str, Any] = {"skip_reason": "", "skills": [], "updates": [], "deletions": []}
    body.update(parts)
    return json.dumps(body)


def weather_spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Current temperature for several cities in one report.",
        "when_to_use": "A report lists the weather of more than one city.",
        "steps": [
            "Geocode each city with the geocoding API.",
            "Fetch each city's forecast separately; on a timeout retry only that city.",
            "Check that every requested city appears in the report.",
        ],
        "pitfalls": ["One batched forecast request for all cities times out as a whole."],
    }
