"""The volatile parts of tool output: a clock, ids, durations, ports, meters.

Every figure comes from the trajectory's own `random.Random`, so a corpus is the same for the
same seed. Nothing here knows whether a step is a trap: noise changes on every call, as it does
in real logs (a request id, the time, the test duration), whether or not the agent is stuck.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_HEX = "0123456789abcdef"
_B64 = string.ascii_letters + string.digits


@dataclass
class Noise:
    """A wall clock that moves with every call and the id, duration and meter makers."""

    rng: random.Random
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 9, 0, tzinfo=UTC))

    @classmethod
    def start(cls, rng: random.Random) -> Noise:
        start = datetime(2026, 11, 2, 7, 0, tzinfo=UTC) + timedelta(
            days=rng.randrange(28), seconds=rng.randrange(11 * 3600)
        )
        return cls(rng, start)

    def advance(self) -> None:
        """Time a step takes: the model's turn plus the tool's run."""
        self.now += timedelta(milliseconds=self.rng.randrange(1_500, 45_000))

    # -- clock formats ---------------------------------------------------------------------------

    def iso(self, offset_ms: int = 0) -> str:
        moment = self.now + timedelta(milliseconds=offset_ms)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def log_time(self, offset_ms: int = 0) -> str:
        moment = self.now + timedelta(milliseconds=offset_ms)
        return moment.strftime("%Y/%m/%d %H:%M:%S")

    def http_date(self) -> str:
        return self.now.strftime("%a, %d %b %Y %H:%M:%S GMT")

    def clock(self) -> str:
        return self.now.strftime("%H:%M:%S")

    def epoch(self) -> int:
        return int(self.now.timestamp())

    # -- ids ---------------------------------------------------------------------------------------

    def hex(self, length: int) -> str:
        return "".join(self.rng.choice(_HEX) for _ in range(length))

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def b64(self, length: int) -> str:
        return "".join(self.rng.choice(_B64) for _ in range(length))

    def pid(self) -> int:
        return self.rng.randrange(1_200, 65_000)

    def port(self) -> int:
        """An ephemeral client port."""
        return self.rng.randrange(32_768, 61_000)

    def address(self) -> str:
        return "0x7f" + self.hex(10)

    # -- figures -----------------------------------------------------------------------------------

    def seconds(self, low: float, high: float) -> str:
        return f"{self.rng.uniform(low, high):.2f}s"

    def millis(self, low: int, high: int) -> int:
        return self.rng.randrange(low, high)

    def tokens(self, text: str) -> str:
        count = max(1, len(text) // 4 + self.rng.randrange(-9, 10))
        return f"{count:,}"

    def bar(self, percent: int, width: int = 20) -> str:
        filled = width * percent // 100
        return "[" + "#" * filled + "." * (width - filled) + "]"

    def curl_meter(self, size: int) -> str:
        """curl's progress meter, with its speed and time columns."""
        speed = self.rng.randrange(900, 98_000)
        spent = f"0:00:0{self.rng.randrange(1, 4)}"
        head = (
            "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
            "                                 Dload  Upload   Total   Spent    Left  Speed\n"
        )
        row = (
            f"100   {size:>4}  100   {size:>4}    0     0  {speed:>6}      0 --:--:-- "
            f"{spent} --:--:-- {speed:>6}"
        )
        return head + row
