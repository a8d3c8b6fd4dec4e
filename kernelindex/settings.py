"""Configuration, read from ``KERNELINDEX_*`` environment variables when asked for."""

from __future__ import annotations

import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///./kernelindex.db"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"
# Hosts always answered besides the public URL's: the machine itself (health checks, a local proxy).
LOCAL_HOSTS = ("localhost", "127.0.0.1")
SOL_EXECBENCH_API = "https://research.nvidia.com/benchmarks/sol-execbench/api"
GITHUB_API = "https://api.github.com"
GITHUB_RAW = "https://raw.githubusercontent.com"
# How long the site waits for its database before answering 503 (``kernelindex.db.engine``).
DB_CONNECT_TIMEOUT_S = 5
DB_STATEMENT_TIMEOUT_S = 10.0
DB_POOL_TIMEOUT_S = 5.0


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELINDEX_", extra="ignore")

    database_url: str = DEFAULT_DATABASE_URL
    # A database that is down or does not answer makes pages fail fast with a 503, not hang:
    # connecting (PostgreSQL; whole seconds, at least 2, as libpq counts them), each statement
    # of a page (PostgreSQL's statement_timeout, and the longest the site waits for any answer
    # on a connection), and a free pooled connection each have a limit.
    db_connect_timeout_s: int = Field(default=DB_CONNECT_TIMEOUT_S, ge=2)
    db_statement_timeout_s: float = Field(default=DB_STATEMENT_TIMEOUT_S, gt=0)
    db_pool_timeout_s: float = Field(default=DB_POOL_TIMEOUT_S, gt=0)
    sol_execbench_url: str = SOL_EXECBENCH_API
    # GitHub's REST API and raw-file host, read by the KernelBench and Liger-Kernel ingests;
    # point them at a mirror (or a local server in tests). A token raises the API's hourly
    # limit for unauthenticated clients (60 requests); it is sent to the API host only.
    github_api_url: str = GITHUB_API
    github_raw_url: str = GITHUB_RAW
    github_token: SecretStr | None = None
    http_timeout_s: float = Field(default=20.0, gt=0)
    http_retries: int = Field(default=4, ge=0, le=10)
    # The bounds of every ingest, whatever its upstream sends (SECURITY.md, "Upstreams we do
    # not trust"): a deadline for the whole run, the longest single wait an upstream may ask
    # for (Retry-After), and caps on pages, entries listed, response bytes, JSON depth, CSV
    # columns and row width, and the ingest's memory.
    ingest_deadline_s: float = Field(default=30 * 60.0, gt=0)
    http_max_wait_s: float = Field(default=30.0, ge=0)
    ingest_max_pages: int = Field(default=1_000, ge=1)
    ingest_max_listed: int = Field(default=200_000, ge=1)
    ingest_max_body_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    ingest_max_json_depth: int = Field(default=64, ge=2)
    ingest_max_csv_columns: int = Field(default=256, ge=1)
    ingest_max_row_chars: int = Field(default=64 * 1024, ge=1)
    ingest_max_memory_mb: int = Field(default=1024, ge=1)
    # Signs session cookies. Unset, a random key is generated once and kept in the store,
    # so every worker of one store signs alike and no key is ever written in a file.
    secret_key: SecretStr | None = None
    # Rate-limit counters go to Redis when set (e.g. redis://127.0.0.1:6379/0), else to the store.
    redis_url: str | None = None
    # Mark cookies Secure and send Strict-Transport-Security: set it when the site is served over HTTPS.
    https_only: bool = False
    # The canonical origin (scheme, host, port if any): every absolute URL the site writes
    # (permalinks, citations, feeds, sitemaps) starts with it, never with a request's Host,
    # and only its host (and the local ones) is answered.
    public_url: str = DEFAULT_PUBLIC_URL
    # The runner keys whose signed rerun bundles `kernelindex rerun import` accepts: a JSON file
    # {"keys": [{"keyId", "publicKey"}]}. Unset, no bundle is accepted: there is no default key.
    runner_keys_file: Path | None = None
    # Where /exports/catalog.jsonl.gz is cached between changes to the catalogue.
    # Rendered public pages and JSON kept per worker, checked against the catalogue version
    # on every request (0 turns the cache off).
    response_cache_mb: int = Field(default=64, ge=0)
    export_dir: Path = Field(default_factory=lambda: Path(tempfile.gettempdir()) / "kernelindex-exports")
    # The key that authenticates backups (an HMAC-SHA256 over the file): `kernelindex export`
    # and `import` refuse to run without it (or `--key-file`). There is no default key.
    backup_key: SecretStr | None = None

    @field_validator("public_url")
    @classmethod
    def _an_origin(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or parts.query:
            raise ValueError(f"public_url must be an origin such as https://kernelindex.example, not {value!r}")
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def trusted_hosts(self) -> list[str]:
        """The host names answered: the public URL's, and the local ones."""
        host = urlsplit(self.public_url).hostname or ""
        return list(dict.fromkeys([host, *LOCAL_HOSTS]))


# Hosts a server listens on that name no host a browser can open: their links go to the machine itself.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def served_at(settings: Settings, host: str, port: int) -> Settings:
    """``settings`` for a server started on ``host`` and ``port``: with no public URL configured
    (``KERNELINDEX_PUBLIC_URL`` unset), absolute links go to where it is served, not to the
    default port; a configured one is kept as it is."""
    if "public_url" in settings.model_fields_set:
        return settings
    shown = "127.0.0.1" if host in WILDCARD_HOSTS else host
    netloc = f"[{shown}]:{port}" if ":" in shown else f"{shown}:{port}"
    return settings.model_copy(update={"public_url": Settings._an_origin(f"http://{netloc}")})
