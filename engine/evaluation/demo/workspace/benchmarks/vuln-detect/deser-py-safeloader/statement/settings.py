import yaml


def load_settings(text: str) -> dict:
    return yaml.load(text, Loader=yaml.SafeLoader)
