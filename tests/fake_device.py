"""A stand-in GPU for the v2 timer's CPU tests: it plays the blocking gate, the flush buffer, the event
factory and the synchronize, and logs every step in order."""

from __future__ import annotations

from collections.abc import Iterator


class Device:
    """A stand-in GPU: logs every step in order; events report scripted durations (milliseconds)."""

    def __init__(self, durations_ms: Iterator[float] | None = None, timeout_slot: int | None = None) -> None:
        self.log: list[str] = []
        self.durations = durations_ms
        self.timeout_slot = timeout_slot
        self.released: set[int] = set()

    # the gate
    def arm(self) -> None:
        self.log.append("arm")
        self.released.clear()

    def block(self, slot: int) -> None:
        self.log.append(f"block {slot}")

    def release(self, slot: int) -> None:
        self.log.append(f"release {slot}")
        self.released.add(slot)

    def timed_out(self, upto: int | None = None) -> list[int]:
        slot = self.timeout_slot
        return [slot] if slot is not None and (upto is None or slot < upto) else []

    # the flush buffer
    def zero_(self) -> None:
        self.log.append("flush")

    def sync(self) -> None:
        self.log.append("sync")

    def event(self, enable_timing: bool = False) -> _Event:
        assert enable_timing
        return _Event(self)


class _Event:
    def __init__(self, device: Device) -> None:
        self.device = device
        self.name = ""

    def record(self) -> None:
        self.device.log.append("record")

    def elapsed_time(self, end: _Event) -> float:
        return next(self.device.durations) if self.device.durations else 0.002
