"""The patch floor's name for the exact unified-diff applier, which lives in
``engine.core.patch_apply`` because the candidate queue (engine.core) applies a candidate's
folder patch too and a floor never imports the one above it."""

from engine.core.patch_apply import (
    Applied,
    Hunk,
    HunkLine,
    ParsedDiff,
    PatchError,
    apply_diff,
    apply_patch,
    parse_diff,
)

__all__ = [
    "Applied",
    "Hunk",
    "HunkLine",
    "ParsedDiff",
    "PatchError",
    "apply_diff",
    "apply_patch",
    "parse_diff",
]
