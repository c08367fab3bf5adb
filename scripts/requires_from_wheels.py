"""What each release of a package without a git mirror declares (its wheel's ``Requires-Dist``), read from
PyPI without downloading the wheels (called by ``scripts/compat_from_mirrors.py``).

vLLM's and SGLang's wheels carry compiled kernels (hundreds of MB a release) and their repositories are past
what can be mirrored here, but a wheel is a zip file whose ``*.dist-info/METADATA`` sits behind a central
directory at its end: two or three HTTP range requests read it. The package index's JSON listing
(PEP 691) gives each release's files; one wheel per final release is read (its requirements are the
same on every platform, markers aside). Each release's requirement lines are kept, one JSON file per
release in the cache folder, so a second run reads only the releases published since.

    python scripts/requires_from_wheels.py --cache DIR vllm
"""

from __future__ import annotations

import argparse
import io
import json
import urllib.request
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

INDEX = "https://pypi.org/simple/{}/"
# package on PyPI and the oldest release read
METADATA_PROJECTS = (("vllm", "0.1.0"), ("sglang", "0.1.0"), ("sgl-kernel", "0.0.1"))


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "distdx-compat-table", **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP range requests, seekable, for ``zipfile.ZipFile``."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = _get(self.url, {"Range": f"bytes={self.pos}-{end - 1}"})
        self.pos += len(data)
        return data

    def readinto(self, b) -> int:  # noqa: ANN001
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)


def wheels_by_release(package: str, oldest: str) -> dict[str, dict]:
    """Final release -> one of its wheels (url, size) as the index lists them, from ``oldest`` on."""
    listing = json.loads(_get(INDEX.format(package), {"Accept": "application/vnd.pypi.simple.v1+json"}))
    out: dict[Version, dict] = {}
    for f in listing["files"]:
        name = f["filename"]
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        try:
            v = Version(name.split("-")[1])
        except (InvalidVersion, IndexError):
            continue
        if v.is_prerelease or v.is_devrelease or v.local or v < Version(oldest):
            continue
        # prefer a Linux x86_64 wheel, the platform these jobs run on
        rank = (0 if "x86_64" in name else 1, name)
        if v not in out or rank < out[v]["rank"]:
            out[v] = {"url": f["url"], "size": f.get("size"), "rank": rank}
    return {str(v): w for v, w in sorted(out.items())}


def requires_dist(url: str, size: int | None) -> list[str]:
    """The ``Requires-Dist`` lines of the wheel at ``url``, read by range requests."""
    if not size:
        size = int(urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60)
                   .headers["Content-Length"])
    with zipfile.ZipFile(io.BufferedReader(RangeFile(url, size), buffer_size=1 << 16)) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        text = z.read(meta).decode("utf-8", errors="replace")
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def release_requirements(package: str, oldest: str, cache: Path) -> list[tuple[str, list[str]]]:
    """(release, its Requires-Dist lines) for every final release from ``oldest`` on, cached per release."""
    out = []
    for version, wheel in wheels_by_release(package, oldest).items():
        kept = cache / f"{package}-{version}.requires.json"
        if kept.exists():
            lines = json.loads(kept.read_text(encoding="utf-8"))
        else:
            lines = requires_dist(wheel["url"], wheel["size"])
            cache.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps(lines) + "\n", encoding="utf-8")
        out.append((version, lines))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "distdx-wheel-api")
    ap.add_argument("package")
    args = ap.parse_args(argv)
    oldest = dict(METADATA_PROJECTS).get(args.package, "0")
    for version, lines in release_requirements(args.package, oldest, args.cache):
        print(version, "; ".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
