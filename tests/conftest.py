"""Set-up for the whole suite."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """DeepSpeed builds its CPU communication op on first use into TORCH_EXTENSIONS_DIR, behind a lock
    file. A run killed during that build leaves the lock, and every later DeepSpeed test then waits on
    it until its timeout; checkouts with different virtual environments sharing ~/.cache also rebuild
    the op for each other. So the suite builds into a folder of its own checkout (unless the caller
    chose one), where a lock at start-up can only be an earlier run's leftover."""
    if "TORCH_EXTENSIONS_DIR" in os.environ:
        return
    own = ROOT / ".torch_extensions"
    os.environ["TORCH_EXTENSIONS_DIR"] = str(own)
    for lock in own.glob("*/lock"):
        lock.unlink(missing_ok=True)
