import os

ATTACH_DIR = "/srv/attachments"


def read_attachment(name: str) -> bytes:
    with open(ATTACH_DIR + "/" + os.path.basename(name), "rb") as fh:
        return fh.read()
