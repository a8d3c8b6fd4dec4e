"""Helpers shared by the Triton implementations."""

from __future__ import annotations

import os

import triton


def interpreting() -> bool:
    """True under the Triton interpreter (TRITON_INTERPRET=1), where tensors live on the CPU."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def autotune(configs: list[triton.Config], key: list[str]):
    """triton.autotune over a handful of configs; the first config only under the interpreter, where
    benchmarking configs means nothing."""
    return triton.autotune(configs=configs[:1] if interpreting() else configs, key=key)
