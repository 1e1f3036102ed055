import os

password = os.environ.get("ADMIN_PASSWORD", "")
if password == "":
    raise SystemExit("ADMIN_PASSWORD must be set")
