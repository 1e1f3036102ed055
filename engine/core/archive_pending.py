"""``python -m engine.core.archive_pending <workspace>``: archive the states restores replaced.

Started detached by ``skillsmith restore`` once the restore is done, so the person gets the
prompt back while the replaced state is compressed. Quiet by design: whatever it cannot finish (a
kill, a secret in the replaced state) the next snapshot command finishes or reports.
"""

from __future__ import annotations

import sys

from engine.core.errors import SkillsmithError
from engine.core.snapshots import finish_pending
from engine.core.workspace import Workspace


def main(argv: list[str]) -> int:
    try:
        finish_pending(Workspace.at(argv[0]))
    except (SkillsmithError, OSError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
