"""The workbench's colour themes and the app-specific variables its stylesheet uses.

Every colour in ``skillsmith.tcss`` and in the rendered diffs, gate badges and charts is a theme
variable, so switching theme (``--theme`` or the command palette) recolours the whole workbench
and a user can still pick any built-in Textual theme: ``variable_defaults`` fills the
Skillsmith-specific variables those themes do not define.
"""

from __future__ import annotations

from pathlib import Path

from textual.color import Color
from textual.theme import Theme

STYLESHEET = Path(__file__).with_name("skillsmith.tcss")

DARK = "skillsmith-dark"
LIGHT = "skillsmith-light"
DEFAULT_THEME = DARK

# Short names accepted by ``--theme``.
ALIASES = {"dark": DARK, "light": LIGHT}


def variable_defaults(system: dict[str, str]) -> dict[str, str]:
    """Skillsmith variables for a theme that does not define them (Textual's built-ins).

    Derived from the theme's generated colour system, so any theme gets legible diff and gate
    colours; backgrounds are blended solid colours because Content styles take no alpha.
    """
    background = Color.parse(system["background"])

    def tint(name: str, amount: float) -> str:
        return background.blend(Color.parse(system[name]), amount).hex

    return {
        "diff-added": tint("success", 0.22),
        "diff-removed": tint("error", 0.22),
        "diff-added-text": system["text-success"],
        "diff-removed-text": system["text-error"],
        "diff-hunk": system["text-accent"],
        "diff-gutter": (background + Color.parse(system["foreground-muted"])).hex,
        "gate-pass": system["text-success"],
        "gate-fail": system["text-error"],
        "gate-held": system["text-warning"],
        "mark": system["text-accent"],
        "chart-bar": system["primary"],
        "chart-highlight": system["accent"],
    }


THEMES: dict[str, Theme] = {
    DARK: Theme(
        name=DARK,
        primary="#7aa2f7",
        secondary="#bb9af7",
        accent="#ff9e64",
        warning="#e0af68",
        error="#f7768e",
        success="#9ece6a",
        foreground="#c0caf5",
        background="#1a1b26",
        surface="#24283b",
        panel="#2f3549",
        dark=True,
        variables={
            "diff-added": "#2e3d2b",
            "diff-removed": "#46283a",
            "diff-added-text": "#b9f27c",
            "diff-removed-text": "#ff9bae",
            "diff-hunk": "#7dcfff",
            "diff-gutter": "#565f89",
            "gate-pass": "#9ece6a",
            "gate-fail": "#f7768e",
            "gate-held": "#e0af68",
            "mark": "#ff9e64",
            "chart-bar": "#7aa2f7",
            "chart-highlight": "#ff9e64",
            "footer-key-foreground": "#7aa2f7",
        },
    ),
    LIGHT: Theme(
        name=LIGHT,
        primary="#2e5cb8",
        secondary="#7847bd",
        accent="#b35900",
        warning="#8f6200",
        error="#c4314b",
        success="#2f7d32",
        foreground="#24292f",
        background="#fafafa",
        surface="#f0f1f4",
        panel="#e2e5eb",
        dark=False,
        variables={
            "diff-added": "#d7e8d5",
            "diff-removed": "#f3d5da",
            "diff-added-text": "#1f5d22",
            "diff-removed-text": "#9a1c33",
            "diff-hunk": "#6f42c1",
            "diff-gutter": "#8c959f",
            "gate-pass": "#2f7d32",
            "gate-fail": "#c4314b",
            "gate-held": "#8f6200",
            "mark": "#b35900",
            "chart-bar": "#2e5cb8",
            "chart-highlight": "#b35900",
            "footer-key-foreground": "#2e5cb8",
        },
    ),
}


def resolve_theme_name(name: str) -> str:
    """Map ``--theme dark``/``light`` to the full theme names; other names pass through."""
    return ALIASES.get(name, name)
