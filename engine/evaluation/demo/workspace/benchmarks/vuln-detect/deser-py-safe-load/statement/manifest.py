import yaml


def parse_manifest(body: str) -> dict:
    data = yaml.safe_load(body)
    if not isinstance(data, dict):
        raise ValueError("manifest must be a mapping")
    return data
