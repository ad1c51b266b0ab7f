"""Redis: Debian's ``redis-server``, persistence off, on a free loopback port."""

from __future__ import annotations

import shutil
from pathlib import Path

from chainloom.stack._model import Progress, Running
from chainloom.stack._process import port_from_env, spawn, wait_until
from chainloom.stack.components._apt import ensure_command


class Redis:
    """The relayer's queue store."""

    name = "redis"
    requires: tuple[str, ...] = ()

    def install(self, progress: Progress) -> None:
        ensure_command("redis-server", "redis-server", progress)

    def start(self, run_dir: Path, deps: dict[str, Running], progress: Progress) -> Running:
        binary = shutil.which("redis-server") or "redis-server"
        port = port_from_env(self.name, "CHAINLOOM_REDIS_PORT")
        data = run_dir / "redis"
        data.mkdir(parents=True, exist_ok=True)
        log = run_dir / "logs" / "redis.log"
        progress.step(f"starting redis on 127.0.0.1:{port}")
        argv = [
            binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data),
            "--databases",
            "64",
            "--protected-mode",
            "yes",
        ]
        pid = spawn(argv, log)
        url = f"redis://127.0.0.1:{port}/0"
        running = Running(
            self.name, "", f"127.0.0.1:{port}", pid, str(log), env={"CHAINLOOM_REDIS__URL": url}
        )
        wait_until(self.name, lambda: bool(self.check(running)), pid=pid, log=log, timeout=30)
        return Running(
            self.name, self.check(running), running.address, pid, str(log), env=running.env
        )

    def check(self, running: Running) -> str:
        import redis as redis_client

        host, port = running.address.rsplit(":", 1)
        client = redis_client.Redis(host=host, port=int(port), socket_timeout=2)
        try:
            client.set("chainloom:stack:health", b"ok", ex=10)
            if client.get("chainloom:stack:health") != b"ok":
                raise RuntimeError("redis did not return what was written")
            info: dict[str, object] = client.info("server")  # type: ignore[assignment]
            return str(info["redis_version"])
        finally:
            client.close()
