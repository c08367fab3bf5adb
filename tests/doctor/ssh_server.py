"""A real SSH server on loopback for the multi-node doctor tests: asyncssh's server (a complete SSH
implementation, not a stand-in) with throw-away host and client keys, reached through the system's
own OpenSSH client (`/usr/bin/ssh`) via an ssh config file that gives each test node a name.

Each node is a user on the one server, and the user decides what the node is like: the command
the client sends runs in a shell (``/bin/sh -c``) with that node's PATH and PYTHONPATH, as sshd
runs it with the user's environment. ``NODES`` lists them.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

asyncssh = pytest.importorskip("asyncssh", reason="the real-SSH doctor tests need asyncssh (the dev extra pins it)")

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass(frozen=True)
class Node:
    name: str
    delay_s: float = 0.0  # the node answers this late (an overloaded node, a slow file system)
    distdx: bool = True  # distdx installed in the node's environment
    packages: tuple[tuple[str, str], ...] = ()  # (distribution, version) this node has instead


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dist_info(root: Path, name: str, version: str) -> None:
    """Installed-package metadata, as pip writes it: what the doctor reads for versions."""
    d = root / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


class SSHServer:
    """Start with :meth:`start` (returns self), stop with :meth:`stop`; ``config`` is the ssh
    config file that names every node (``ssh -F config NODE``)."""

    def __init__(self, root: Path, nodes: list[Node]) -> None:
        self.root = root
        self.nodes = {n.name: n for n in nodes}
        self.port = _free_port()
        self.loop = asyncio.new_event_loop()
        self.server = None
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    # ---------------------------------------------------------------- keys and client config

    def _write_key(self, key, name: str) -> Path:
        path = self.root / name
        key.write_private_key(str(path))
        os.chmod(path, 0o600)
        key.write_public_key(str(path) + ".pub")
        return path

    def _prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = self._write_key(asyncssh.generate_private_key("ssh-ed25519"), "id_client")
        self.stranger_key = self._write_key(asyncssh.generate_private_key("ssh-ed25519"), "id_stranger")
        (self.root / "authorized_keys").write_text(Path(str(self.client_key) + ".pub").read_text())
        entry = f"[127.0.0.1]:{self.port} {self.host_key.export_public_key().decode().strip()}\n"
        (self.root / "known_hosts").write_text(entry)
        other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
        (self.root / "known_hosts_old").write_text(f"[127.0.0.1]:{self.port} {other}\n")
        bin_dir = self.root / "bin"
        bin_dir.mkdir(exist_ok=True)
        launcher = bin_dir / "distdx"
        launcher.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m distdx \"$@\"\n")
        launcher.chmod(0o755)
        self.config = self.root / "ssh_config"
        blocks = []
        for name in self.nodes:
            blocks.append(self._host_block(name, self.port, name, self.client_key, self.root / "known_hosts"))
        blocks.append(self._host_block("node-refused", _free_port(), "ok", self.client_key, self.root / "known_hosts"))
        blocks.append(self._host_block("node-wrong-key", self.port, "ok", self.stranger_key, self.root / "known_hosts"))
        blocks.append(self._host_block("node-new-host-key", self.port, "ok", self.client_key, self.root / "known_hosts_old"))
        self.config.write_text("\n".join(blocks))

    @staticmethod
    def _host_block(alias: str, port: int, user: str, key: Path, known_hosts: Path) -> str:
        return (f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n"
                f"  IdentitiesOnly yes\n  IdentityAgent none\n  UserKnownHostsFile {known_hosts}\n"
                f"  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  PasswordAuthentication no\n"
                f"  KbdInteractiveAuthentication no\n")

    def _environment(self, node: Node) -> dict[str, str]:
        path = [str(self.root / "bin")] if node.distdx else []
        env = {"PATH": ":".join(path + ["/usr/bin", "/bin"]), "HOME": str(self.root), "LANG": "C.UTF-8"}
        pythonpath = [str(SRC)]
        if node.packages:
            site = self.root / f"site-{node.name}"
            for dist, version in node.packages:
                _dist_info(site, dist, version)
            pythonpath.insert(0, str(site))
        env["PYTHONPATH"] = ":".join(pythonpath)
        return env

    # ---------------------------------------------------------------- server

    async def _session(self, process) -> None:  # type: ignore[no-untyped-def]
        node = self.nodes.get(process.get_extra_info("username"))
        if node is None or not process.command:
            process.stderr.write("this test server only runs commands of known nodes\n")
            process.exit(1)
            return
        if node.delay_s:
            await asyncio.sleep(node.delay_s)
        child = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", process.command, env=self._environment(node),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await child.communicate()
        process.stdout.write(out.decode(errors="replace"))
        process.stderr.write(err.decode(errors="replace"))
        process.exit(child.returncode)

    def start(self) -> "SSHServer":
        self._prepare()
        self.thread.start()

        async def listen():  # type: ignore[no-untyped-def]
            return await asyncssh.create_server(
                asyncssh.SSHServer, "127.0.0.1", self.port, server_host_keys=[self.host_key],
                authorized_client_keys=str(self.root / "authorized_keys"), process_factory=self._session,
                encoding="utf-8")

        future = asyncio.run_coroutine_threadsafe(listen(), self.loop)
        self.server = future.result(timeout=10)
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            if self.server is not None:
                self.server.close()
            current = asyncio.current_task()
            for task in asyncio.all_tasks():
                if task is not current:
                    task.cancel()  # a slow node's session still waiting

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
