"""YAML loading for the bundled knowledge files: libyaml's C loader when present (several times
faster on the rule files), the pure-Python safe loader otherwise. Both are safe loaders."""

from __future__ import annotations

import yaml

YAMLError = yaml.YAMLError
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str):
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader


def bundled_yaml(package: str, name: str):
    """A YAML data file shipped inside a distdx package (``bundled_yaml("distdx.lint", "removed.yaml")``)."""
    from importlib import resources

    return load_yaml(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
