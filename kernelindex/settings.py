"""Configuration, read from ``KERNELINDEX_*`` environment variables when asked for."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./kernelindex.db"
SOL_EXECBENCH_API = "https://research.nvidia.com/benchmarks/sol-execbench/api"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELINDEX_", extra="ignore")

    database_url: str = DEFAULT_DATABASE_URL
    sol_execbench_url: str = SOL_EXECBENCH_API
    http_timeout_s: float = Field(default=20.0, gt=0)
    http_retries: int = Field(default=4, ge=0, le=10)
    # Where /exports/catalog.jsonl.gz is cached between changes to the catalogue.
    export_dir: Path = Field(default_factory=lambda: Path(tempfile.gettempdir()) / "kernelindex-exports")
