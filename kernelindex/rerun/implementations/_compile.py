"""Shared torch.compile set-up: built lazily on first call (never at import), dynamic shapes, default
mode (no max-autotune, to keep compile time small), a recompile limit that covers a 16-case suite."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

RECOMPILE_LIMIT = 64


def compiled(fn: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    """A zero-argument getter returning `torch.compile(fn, dynamic=True)`, made once."""

    @functools.cache
    def get() -> Callable[..., Any]:
        config = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, max(getattr(config, name), RECOMPILE_LIMIT))
        return torch.compile(fn, dynamic=True)

    return get
