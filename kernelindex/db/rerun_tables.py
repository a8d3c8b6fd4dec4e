"""Tables of controlled reruns: the signed bundles as received, and what each suite run
measured case by case.

A rerun's suite-scoped figure is an ordinary ``run`` row (so it ranks, compares and cites
like any other); these tables keep what only a rerun has: the bundle with its signature
and raw samples, so anyone can verify it again, and the case-scoped ``BenchmarkRun``
manifests with their bounds.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from kernelindex.db.base import Base
from kernelindex.db.tables import ManifestRecord, Run


class RerunBundle(Base):
    """A bundle exactly as the runner signed it: the evidence behind ``verified``."""

    __tablename__ = "rerun_bundle"

    id: Mapped[int] = mapped_column(primary_key=True)
    bundle_id: Mapped[str] = mapped_column(String(64), unique=True)
    key_id: Mapped[str] = mapped_column(String(64), index=True)
    # The operator the key registry named for the signing key when the bundle was imported; None
    # where it named none. Reruns of two different operators can be independent, never of one.
    operator: Mapped[str | None] = mapped_column(String(200))
    # The runner's session: one lease of one machine.
    session_id: Mapped[str] = mapped_column(String(64))
    # sha256 of the bundle file's bytes as imported: what the download link serves.
    file_sha256: Mapped[str] = mapped_column(String(64))
    # The physical GPU's UUID (the host name where the runner could not read one): two reruns on
    # the same GPU are not independent, whatever keys signed them.
    machine_id: Mapped[str] = mapped_column(String(300))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    imported_at: Mapped[datetime]
    bundle_json: Mapped[str] = mapped_column(Text)


class RerunResult(Base):
    """One implementation's measurement of one suite in one bundle, tied to its run row."""

    __tablename__ = "rerun_result"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), unique=True)
    bundle_id: Mapped[int] = mapped_column(ForeignKey("rerun_bundle.id"), index=True)
    # Geometric mean of the per-case speed-of-light bounds (datasheet peaks; 0 where none is known).
    bound_ns: Mapped[int] = mapped_column(BigInteger)
    # Geometric mean of the per-case bounds at the ceilings the runner measured (some kernels beat it).
    achievable_bound_ns: Mapped[int] = mapped_column(BigInteger)
    cases_passed: Mapped[int]
    case_count: Mapped[int]

    run: Mapped[Run] = relationship()
    bundle: Mapped[RerunBundle] = relationship()
    cases: Mapped[list[RerunCase]] = relationship(order_by="RerunCase.position")


class RerunCase(ManifestRecord, Base):
    """A case-scoped ``BenchmarkRun`` manifest, and its speed-of-light and achievable bounds for
    the cases table (every other figure of the case is read from the stored bundle)."""

    __tablename__ = "rerun_case"
    __table_args__ = (UniqueConstraint("result_id", "position"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("rerun_result.id"))
    position: Mapped[int]
    bound_ns: Mapped[int] = mapped_column(BigInteger)
    achievable_bound_ns: Mapped[int] = mapped_column(BigInteger)


class RunnerKey(Base):
    """A runner key a maintainer approved for an operator's account: bundles it signs may be uploaded
    by that account (``POST /api/v1/reruns``). The keys of the registry's own runner are configured in
    a file instead (``runner-keys.json``); a key revoked here is refused for every later upload, and
    the runs it signed before stay as they are."""

    __tablename__ = "runner_key"

    id: Mapped[int] = mapped_column(primary_key=True)
    # ``ed25519:`` and the first 16 hex digits of the sha256 of the raw public key, as bundles name it.
    key_id: Mapped[str] = mapped_column(String(64), unique=True)
    public_key: Mapped[str] = mapped_column(String(64))  # base64 of the raw 32 bytes
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"), index=True)
    # Who the operator is (name, affiliation) and the machine the key measures on, as the maintainer wrote them.
    operator_name: Mapped[str] = mapped_column(String(200))
    machine: Mapped[str] = mapped_column(String(300))
    approved_by_id: Mapped[int] = mapped_column(ForeignKey("user_account.id"))
    approved_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]
    revoked_by_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id"))
