"""Fixed-window rate limits shared by every worker: in the database, or in Redis.

``allow(limit, subject)`` counts one attempt and says whether it is allowed;
``refund(limit, subject)`` takes it back when the attempt turned out not to count (a
sign-in that succeeded, an attestation refused as invalid). Counting first and refunding
after keeps the limit exact under concurrent attempts. The database backend keeps one row
per key and window (an upsert, so concurrent workers add up correctly); the Redis backend
uses INCR with an expiry.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import delete, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from kernelindex.db.account_tables import RateLimitCounter


@dataclass(frozen=True)
class Limit:
    name: str
    count: int
    window_s: int
    message: str


LIMITS = {
    "signup": Limit("signup", 5, 3600, "Too many sign-ups from this address; try again in an hour."),
    "signin": Limit("signin", 10, 600, "Too many sign-in attempts from this address; try again in ten minutes."),
    # Failed sign-ins to one handle from any number of addresses: a password guessed from a
    # botnet meets this one. Counted whether or not the account exists, so it reveals nothing.
    "signin_account": Limit(
        "signin_account", 20, 3600, "Too many failed sign-ins to this account; try again in an hour."
    ),
    "report": Limit("report", 10, 3600, "Too many reports from this address; try again in an hour."),
    # Per maintainer: generous for real work, a stop for a runaway script or a stolen session.
    "moderate": Limit("moderate", 120, 3600, "Too many moderation actions from this account; try again in an hour."),
    # Requests to /mcp (serve --mcp) per address: an agent at work makes a few a minute.
    "mcp": Limit("mcp", 600, 60, "Too many MCP requests from this address; at most 600 a minute, try again shortly."),
    "attest": Limit("attest", 20, 86400, "You have added 20 attestations today, the daily limit; try again tomorrow."),
    "rerun_upload": Limit(
        "rerun_upload", 1000, 86400, "You have sent 1,000 rerun bundles today, the limit; try tomorrow."
    ),
    # Counted once a submission has passed every other check: a refused one costs nothing.
    "submit": Limit("submit", 20, 86400, "You have submitted 20 runs today, the daily limit; try again tomorrow."),
}


class Counter(Protocol):
    def increment(self, key: str, window_start: int, window_s: int) -> int: ...

    def decrement(self, key: str, window_start: int) -> None: ...


class DatabaseCounter:
    def __init__(self, sessions: sessionmaker[Session]):
        self.sessions = sessions

    def increment(self, key: str, window_start: int, window_s: int) -> int:
        with self.sessions.begin() as session:
            dialect = postgresql if session.bind is not None and session.bind.dialect.name == "postgresql" else sqlite
            statement = dialect.insert(RateLimitCounter).values(key=key, window_start=window_start, hits=1)
            statement = statement.on_conflict_do_update(
                index_elements=["key", "window_start"], set_={"hits": RateLimitCounter.hits + 1}
            ).returning(RateLimitCounter.hits)
            hits = session.execute(statement).scalar_one()
            # Old windows are of no further use; dropping them keeps the table small.
            session.execute(
                delete(RateLimitCounter).where(
                    RateLimitCounter.key == key, RateLimitCounter.window_start < window_start
                )
            )
            return int(hits)

    def decrement(self, key: str, window_start: int) -> None:
        with self.sessions.begin() as session:
            session.execute(
                update(RateLimitCounter)
                .where(
                    RateLimitCounter.key == key,
                    RateLimitCounter.window_start == window_start,
                    RateLimitCounter.hits > 0,
                )
                .values(hits=RateLimitCounter.hits - 1)
            )


class RedisCounter:
    def __init__(self, url: str):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=2)

    def increment(self, key: str, window_start: int, window_s: int) -> int:
        name = f"kernelindex:rate:{key}:{window_start}"
        pipeline = self.client.pipeline()
        pipeline.incr(name)
        pipeline.expire(name, window_s + 60)
        hits, _ = pipeline.execute()
        return int(hits)

    def decrement(self, key: str, window_start: int) -> None:
        # Only an existing counter: a refund must never create a key without an expiry.
        self.client.eval(
            "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0",
            1,
            f"kernelindex:rate:{key}:{window_start}",
        )


class RateLimiter:
    def __init__(self, counter: Counter, clock: Callable[[], float] = time.time):
        self.counter = counter
        self.clock = clock

    def allow(self, limit: Limit, subject: str) -> bool:
        """Count one attempt by ``subject`` (an address or an account) against ``limit``."""
        window_start = int(self.clock()) // limit.window_s * limit.window_s
        hits = self.counter.increment(f"{limit.name}:{subject}", window_start, limit.window_s)
        return hits <= limit.count

    def refund(self, limit: Limit, subject: str) -> None:
        """Take back one attempt counted by ``allow`` that should not count against ``limit``."""
        window_start = int(self.clock()) // limit.window_s * limit.window_s
        self.counter.decrement(f"{limit.name}:{subject}", window_start)
