import yaml


def load_rules(path: str) -> list:
    with open(path, encoding="utf-8") as fh:
        rules = yaml.load(fh, Loader=yaml.SafeLoader)
    return list(rules or [])
