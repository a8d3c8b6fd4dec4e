"""The blocking kernel of protocol v2: hold the GPU until the host says go.

A one-thread Triton kernel polls a flag in pinned host memory (read through the GPU's mapping of it,
volatile, so every poll crosses the bus) and returns once the host has set it. The timer enqueues it
before the start event and sets the flag only after the stop event is queued, so the GPU runs start,
call and stop back to back however long the host took to queue them. Each call of a trial has its own
flag slot, so no flag is ever reset while a kernel may still be polling it. After `max_polls` polls the
kernel gives up and sets its slot's timed-out mark: the sample may hold host time and is not used.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernelindex.rerun import protocol_v2


@triton.jit
def _wait_for_flag(flag_ptr, timed_out_ptr, max_polls):  # type: ignore[no-untyped-def]
    released = tl.load(flag_ptr, volatile=True)
    polls = 0
    while (released == 0) & (polls < max_polls):
        released = tl.load(flag_ptr, volatile=True)
        polls += 1
    if released == 0:
        tl.store(timed_out_ptr, 1)


class BlockTimeout(RuntimeError):
    """A blocking kernel gave up before the host released it."""


class BlockingGate:
    """Flag slots in pinned host memory and the kernel that waits on them (see the module docstring)."""

    def __init__(self, slots: int, max_polls: int = protocol_v2.BLOCK_MAX_POLLS) -> None:
        if slots < 1:
            raise ValueError("a blocking gate needs at least one slot")
        self.max_polls = max_polls
        self.flags = torch.zeros(slots, dtype=torch.int32, pin_memory=True)
        self.timeouts = torch.zeros(slots, dtype=torch.int32, pin_memory=True)
        # Compile the kernel now, with the flags already set, so no trial pays for it: Triton specializes
        # on whether a pointer is 16-byte aligned, and slot 1's flag is not, so both variants are built.
        self.flags.fill_(1)
        for slot in range(min(slots, 2)):
            self.block(slot)
        torch.cuda.synchronize()
        self.arm()

    def arm(self) -> None:
        """Clear every flag and mark; only call while no blocking kernel is queued (after a synchronize)."""
        self.flags.zero_()
        self.timeouts.zero_()

    def block(self, slot: int) -> None:
        """Queue a kernel that holds the GPU until `release(slot)`."""
        _wait_for_flag[(1,)](self.flags[slot : slot + 1], self.timeouts[slot : slot + 1], self.max_polls, num_warps=1)

    def release(self, slot: int) -> None:
        self.flags[slot] = 1

    def timed_out(self, upto: int | None = None) -> list[int]:
        """The slots (below `upto`, default all) whose kernel gave up; readable without a synchronize,
        since the marks live in host memory."""
        marks = self.timeouts[:upto].tolist()
        return [slot for slot, mark in enumerate(marks) if mark]
