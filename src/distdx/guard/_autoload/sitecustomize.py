"""Switches the distdx guard on in any Python process started by `distdx run --guard`.

It is found first on PYTHONPATH; afterwards it runs the sitecustomize it shadows, if any.
"""

import os
import sys


def _activate() -> None:
    if os.environ.get("DISTDX_GUARD") != "1":
        return
    try:
        from distdx.guard import install

        install()
    except Exception as e:  # noqa: BLE001 - never stop the job from starting
        sys.stderr.write(f"[distdx-guard] not active: {type(e).__name__}: {e}\n")


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.origin is None or os.path.dirname(os.path.abspath(spec.origin)) == here:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]


_activate()
_chain()
