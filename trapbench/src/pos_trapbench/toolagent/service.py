"""The service: an API behind nginx answers 502 because its database URL has the wrong port.

`http_request` and `restart_service`; after the fix the API boots for a few steps (503), or,
when a polling trap is armed, stays "waiting for lock" until it is restarted again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pos_trapbench.toolagent.traps import paired_or_cycled
from pos_trapbench.toolagent.workspace import (
    Call,
    PollingTask,
    Result,
    SafePoint,
    Workspace,
    fact,
)


class Service(PollingTask):
    name = "service"
    ENV = "deploy/api.env"
    LOG = "logs/api/app.log"
    COMPOSE = "deploy/docker-compose.yml"
    URL = "http://localhost:8080/health"

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        rng = ws.rng
        self.db_port = rng.choice([5432, 5433, 6432])
        self.wrong_port = rng.choice([p for p in (5432, 5433, 6432, 5442) if p != self.db_port])
        self.env = {
            "DATABASE_URL": f"postgresql://app:app@db:{self.wrong_port}/app",
            "DB_POOL_SIZE": str(rng.choice([5, 10, 20])),
            "DB_CONNECT_TIMEOUT": str(rng.choice([3, 5, 10])),
            "WEB_CONCURRENCY": str(rng.choice([2, 4])),
            "LOG_LEVEL": "info",
        }
        ws.write(self.ENV, self._env_lines())
        ws.write(
            self.COMPOSE,
            [
                "services:",
                "  db:",
                "    image: postgres:16",
                f"    command: postgres -p {self.db_port}",
                "  api:",
                "    build: .",
                f"    env_file: {self.ENV}",
                "  nginx:",
                "    image: nginx:1.27",
                "    ports: ['8080:80']",
            ],
        )
        self.migrations = rng.randint(4, 7)
        self.boot_total = self.migrations
        self.boot_left = self.boot_total
        self.saw_down = self.cfg_read = self.cause_known = self.port_known = False
        self.restarted = self.hung = self.verified = False
        self.restarts = 0
        self.pid = ws.noise.pid()
        self.goal_text = f"get {self.URL} to answer 200"

    def _env_lines(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.env.items()]

    @property
    def fixed(self) -> bool:
        return self.env["DATABASE_URL"].endswith(f":{self.db_port}/app")

    @property
    def state(self) -> str:
        if not (self.restarted and self.fixed):
            return "down"
        if self.hung or self.boot_left > 0:
            return "starting"
        return "up"

    def facts(self) -> set[str]:
        facts = {fact("status", "api", self.state), fact("listens", "db", self.db_port)}
        port = self.env["DATABASE_URL"].rsplit(":", 1)[1].split("/")[0]
        facts.add(fact("connects", "api", f"db:{port}"))
        facts |= {fact("setting", self.ENV, k, v) for k, v in self.env.items()}
        code = {"down": 502, "starting": 503, "up": 200}[self.state]
        facts.add(fact("responds", "/health", code))
        if self.state == "starting":
            done = self.boot_total - self.boot_left
            facts.add(
                fact("migrations", "api", "waiting" if self.hung else f"{done}/{self.migrations}")
            )
        return facts

    def goals(self) -> set[str]:
        return {fact("responds", "/health", 200), fact("status", "api", "up")}

    def questions(self) -> set[str]:
        return set() if self.cause_known else {fact("cause", "api")}

    def remaining(self) -> int:
        steps = (not self.saw_down) + (not self.cfg_read) + (not self.cause_known)
        steps += (not self.port_known) + (not self.fixed) + (not self.restarted) + self.hung
        return steps + self.boot_left + (not self.verified)

    def entities(self) -> set[str]:
        return {"api", "/health", "db", self.ENV}

    def tick(self) -> None:
        if self.restarted and self.fixed and not self.hung and self.boot_left > 0:
            self.boot_left -= 1

    def edited(self, path: str, old: str, new: str) -> None:
        if path == self.ENV:
            for line in self.ws.files[path]:
                key, _, value = line.partition("=")
                self.env[key] = value

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        if path == self.ENV:
            self.cfg_read = True
        elif path == self.COMPOSE:
            self.port_known = True
        elif path == self.LOG:
            self.cause_known = True
            return Result(self._log())
        return None

    def _log(self) -> str:
        noise = self.ws.noise
        lines = []
        port = self.env["DATABASE_URL"].rsplit(":", 1)[1].split("/")[0]
        for back in range(6, 0, -1):
            at = noise.iso(-back * noise.millis(800, 4000))
            if self.state == "down":
                lines += [
                    f"{at} [pid {self.pid}] INFO  Starting gunicorn 23.0.0 (workers={self.env['WEB_CONCURRENCY']})",
                    f"{at} [pid {self.pid}] ERROR sqlalchemy.exc.OperationalError: connection to server at "
                    f'"db" (172.18.0.{noise.millis(2, 9)}), port {port} failed: Connection refused',
                    f"{at} [pid {self.pid}] INFO  Worker exiting (pid: {noise.pid()})",
                ]
            elif self.hung:
                lines.append(
                    f"{at} [pid {self.pid}] INFO  alembic: waiting for advisory lock 72707369 "
                    f"(held by pid {noise.pid()} since {noise.iso(-3_600_000)})"
                )
            else:
                lines.append(f"{at} [pid {self.pid}] INFO  GET /health 200 {noise.millis(1, 30)}ms")
        return "\n".join(lines[-12:])

    def handle(self, call: Call) -> Result | None:
        if call.tool == "http_request":
            return self._request(call.args)
        if call.tool == "restart_service":
            return self._restart(call.args)
        return None

    def _request(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        url = str(args["url"])
        if url.startswith("http://localhost:8000") and self.state == "down":
            return Result(
                f"*   Trying 127.0.0.1:8000...\n* connect to 127.0.0.1 port 8000 from 127.0.0.1 port "
                f"{noise.port()} failed: Connection refused\ncurl: (7) Failed to connect to localhost "
                f"port 8000 after {noise.millis(0, 3)} ms: Couldn't connect to server",
                error=True,
            )
        if not url.split("?")[0].endswith("/health"):
            return Result(f"curl: (22) The requested URL returned error: 404 ({url})")
        self.ws.see("api", "/health")
        uptime = noise.millis(1, 40)
        if self.state == "down":
            self.saw_down = True
            status, body = (
                "502 Bad Gateway",
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 "
                "Bad Gateway</h1></center>\r\n<hr><center>nginx/1.27.3</center>\r\n</body>\r\n</html>",
            )
        elif self.state == "starting":
            done = self.boot_total - self.boot_left
            migrations = "waiting for lock" if self.hung else f"running {done}/{self.migrations}"
            status = "503 Service Unavailable"
            body = json.dumps(
                {
                    "status": "starting",
                    "uptime_s": uptime,
                    "checks": {"db": "ok", "migrations": migrations},
                }
            )
        else:
            self.verified = True
            status = "200 OK"
            body = json.dumps(
                {"status": "ok", "version": "2.14.1", "uptime_s": uptime, "commit": noise.hex(7)}
            )
        head = [
            "*   Trying 127.0.0.1:8080...",
            f"* Connected to localhost (127.0.0.1) port 8080 (#0) local port {noise.port()}",
            f"HTTP/1.1 {status}",
            "Server: nginx/1.27.3",
            f"Date: {noise.http_date()}",
            f"Content-Length: {len(body)}",
            "Connection: keep-alive",
            f"X-Request-Id: {noise.uuid()}",
            "",
        ]
        return Result("\n".join(head) + body + "\n" + noise.curl_meter(len(body)))

    def _restart(self, args: dict[str, Any]) -> Result:
        noise = self.ws.noise
        name = str(args["name"])
        if name != "api":
            return Result(f"{name}: restarted (pid {noise.pid()}) at {noise.iso()}")
        old, self.pid = self.pid, noise.pid()
        self.restarts += 1
        if self.fixed:
            self.restarted = True
            if self.hang_armed:
                self.hung, self.hang_armed = True, False
            else:
                self.hung = False
                self.boot_left = self.boot_total
        self.ws.see("api")
        return Result(
            f"Stopping api ... done (pid {old}, exit code {3 if not self.fixed else 0})\n"
            f"Starting api ... done (pid {self.pid}) at {noise.iso()} [{noise.seconds(0.3, 2.5)}]"
        )

    def flow(self) -> Iterator[Call | SafePoint]:
        health = Call("http_request", {"method": "GET", "url": self.URL})
        yield health
        yield Call("read_file", {"path": self.ENV})
        yield SafePoint("S1")
        yield Call("read_file", {"path": self.LOG})
        yield Call("read_file", {"path": self.COMPOSE})
        old = self.env["DATABASE_URL"]
        yield Call(
            "edit_file",
            {
                "path": self.ENV,
                "old": old,
                "new": old.replace(f":{self.wrong_port}/", f":{self.db_port}/"),
            },
        )
        yield Call("restart_service", {"name": "api"})
        if self.hung:
            for _ in range(self.hang_length):
                yield Call("http_request", health.args, "polling")
            yield Call("read_file", {"path": self.LOG})
            yield Call("restart_service", {"name": "api"})
        while not self.verified:
            yield Call("http_request", health.args, "poll_done")
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        health = Call("http_request", {"method": "GET", "url": self.URL})
        if kind == "repeat":
            draw = rng.random()
            if draw < 0.35:  # a cache-buster that changes every call
                return [
                    Call(
                        "http_request",
                        {"method": "GET", "url": f"{self.URL}?ts={self.ws.noise.epoch() + 17 * i}"},
                    )
                    for i in range(rng.randint(6, 12))
                ]
            if draw < 0.6 and point == "S1":  # the API's own port, refused while it is down
                health = Call(
                    "http_request", {"method": "GET", "url": "http://localhost:8000/health"}
                )
            return [health] * rng.randint(6, 12)
        env = Call("read_file", {"path": self.ENV})
        if kind == "semantic" and point == "S1":
            calls: list[Call] = []
            current = dict(self.env)
            tweaks = {
                "DB_CONNECT_TIMEOUT": ["15", "30", "60", "120"],
                "DB_POOL_SIZE": ["1", "2", "40", "50"],
                "WEB_CONCURRENCY": ["1", "8", "3", "6"],
            }
            keys = rng.sample(list(tweaks), 2)
            for attempt in range(rng.randint(3, 4)):
                key = keys[attempt % 2]
                value = next(v for v in tweaks[key] if v != current[key])
                tweaks[key].remove(value)
                calls.append(
                    Call(
                        "edit_file",
                        {"path": self.ENV, "old": f"{key}={current[key]}", "new": f"{key}={value}"},
                    )
                )
                current[key] = value
                calls.append(Call("restart_service", {"name": "api"}))
                calls.append(health)
            return calls
        pool = [
            health,
            env,
            Call("restart_service", {"name": "nginx"}),
            Call("list_dir", {"path": "deploy"}),
        ]
        if point == "S2":
            pool.append(Call("read_file", {"path": self.COMPOSE}))
        return paired_or_cycled(kind, rng, (health, env), pool)
