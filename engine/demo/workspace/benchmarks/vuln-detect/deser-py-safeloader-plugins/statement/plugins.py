import yaml


def plugin_manifest(raw: str) -> dict:
    manifest = yaml.load(raw, Loader=yaml.SafeLoader)
    return manifest if isinstance(manifest, dict) else {}
