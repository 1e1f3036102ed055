import hashlib


def cache_key(url: str) -> str:
    return hashlib.sha1(url.encode(), usedforsecurity=False).hexdigest()
