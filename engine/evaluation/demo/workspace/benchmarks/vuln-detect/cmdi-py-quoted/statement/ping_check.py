import os
import shlex


def reachable(host: str) -> bool:
    return os.system("ping -c 1 " + shlex.quote(host)) == 0
