"""YAML loading for the bundled knowledge files: libyaml's C loader when present (several times
faster on the rule files), the pure-Python safe loader otherwise. Both are safe loaders.

PyYAML is imported on first use: a diagnosis whose knowledge comes from the cache
(:func:`distdx.paths.cached`) parses no YAML and does not pay for importing it."""

from __future__ import annotations


def load_yaml(text: str):
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader


def __getattr__(name: str):  # noqa: ANN202 - ``YAMLError``, PyYAML's error class, imported when asked for
    if name == "YAMLError":
        import yaml

        return yaml.YAMLError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundled_yaml(package: str, name: str):
    """A YAML data file shipped inside a distdx package (``bundled_yaml("distdx.lint", "removed.yaml")``)."""
    from importlib import resources

    return load_yaml(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
