"""Whether a reported KernelBench figure holds: reruns of the same program, case and mode on the same GPU
model, under the source's own settings, confirm or contradict it (one answer, for the run page, its JSON
twin and ``/discrepancies``).

Which reruns check a figure: those under the source-faithful protocol (KernelBench's settings, v2's timer);
where a problem has none, strict v2 reruns of a program that uses nothing strict v2 sets differently
(``ranking.settings_neutral``: no convolution, no cuDNN RNN), since for it the two protocols run the same
arithmetic. A strict rerun of a convolution never checks the source: it runs with TF32 off, KernelBench
with PyTorch's default (cuDNN convolutions in TF32). Both time the Model as constructed (training mode)
under no_grad, as KernelBench does, so the mode is not a difference.

The bound: twice the largest spread between reruns of one KernelBench program, mode and GPU model measured
in separate sessions (``ranking.confirmation_bound``), read from the registry's own reruns each time, so it
follows the evidence; v2's noise gate where no program was measured twice.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from kernelindex.db.rerun_tables import RerunBundle, RerunResult
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Source, Workload
from kernelindex.figures import percent
from kernelindex.manifests.types import RunStatus
from kernelindex.ranking import (
    CONTRADICTED,
    UNCHECKED,
    confirmation_bound,
    confirmation_state,
    settings_neutral,
)
from kernelindex.rerun import protocol_v2
from kernelindex.store.rerun_protocols import RERUN_PROTOCOL_FAITHFUL_NAME, RERUN_PROTOCOL_V2_NAME

KERNELBENCH = "kernelbench"
# KernelBench's modes that a rerun measures, by the implementation name both give them (a rerun's own
# implementation is named after the mode and the program's digest: ``pytorch-eager-<sha256[:12]>``).
MODES = ("pytorch-eager", "torch-compile-inductor-default")
STRICT_REASON = (
    "Only strict v2 reruns measured this program, and they do not check the source: strict v2 turns TF32 off "
    "(torch.backends.cudnn.allow_tf32 = False), while KernelBench times with PyTorch's default, under which cuDNN "
    "runs this program's convolutions (or recurrent layers) in TF32. Both time the Model as constructed "
    "(training mode), so the mode does not differ. A source-faithful rerun on this GPU model would check it."
)


@dataclass(frozen=True)
class SpreadBound:
    """The confirmation bound and what it was derived from."""

    bound: float
    largest_spread: float | None  # None: no program was measured twice, so the noise gate stands in
    pairs: int  # (program, mode, GPU model, protocol) groups measured in two sessions or more

    @property
    def rule(self) -> str:
        bound = percent(self.bound * 100)
        if self.largest_spread is None:
            return (
                f"{bound}: no KernelBench program has been rerun twice yet, so protocol v2's noise gate "
                "stands in for the run-to-run spread"
            )
        groups = "group" if self.pairs == 1 else "groups"
        return (
            f"{bound}: twice the largest spread ({percent(self.largest_spread * 100)}) between reruns of one "
            f"KernelBench program, mode and GPU model in separate sessions ({self.pairs} such {groups})"
        )


@dataclass(frozen=True)
class Confirmation:
    """A reported figure against the reruns that check it (``state`` unchecked: none do, ``reason`` says why)."""

    run_id: int
    run_name: str
    state: str
    by_runs: tuple[str, ...]
    ratio: float | None  # reported / rerun figure
    bound: float
    bound_rule: str
    reported_ns: int
    rerun_ns: int | None  # the median of the checking reruns' figures
    checked_under: str | None  # the protocol of the checking reruns
    reason: str
    gpu: str
    workload: str
    mode: str

    @property
    def departure(self) -> float:
        """How far apart the two figures are: larger / smaller − 1 (0 where unchecked)."""
        return max(self.ratio, 1 / self.ratio) - 1 if self.ratio else 0.0


@dataclass(frozen=True)
class _Rerun:
    name: str
    workload_id: int
    gpu: str
    mode: str
    protocol: str
    latency_ns: int
    session_id: str
    implementation_id: int


def spread_bound(session: Session) -> SpreadBound:
    """The confirmation bound, from every KernelBench rerun measured under v2's timer."""
    spreads = []
    groups: dict[tuple[int, int, str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for rerun in _reruns(session, None):
        groups[(rerun.workload_id, rerun.implementation_id, rerun.gpu, rerun.protocol)][rerun.session_id].append(
            rerun.latency_ns
        )
    for by_session in groups.values():
        if len(by_session) > 1:
            figures = [statistics.median(latencies) for latencies in by_session.values()]
            spreads.append(max(figures) / min(figures) - 1)
    bound = confirmation_bound(spreads, protocol_v2.NOISE_BOUND)
    return SpreadBound(bound, max(spreads) if spreads else None, len(spreads))


def confirmations(session: Session, runs: Sequence[Run], bound: SpreadBound | None = None) -> dict[int, Confirmation]:
    """The confirmation of each reported KernelBench figure among ``runs`` (others are left out), by run id."""
    reported = [r for r in runs if _mode(r) is not None and r.source is not None and r.source.slug == KERNELBENCH]
    if not reported:
        return {}
    bound = bound or spread_bound(session)
    reruns = _reruns(session, {r.workload_id for r in reported})
    candidates: dict[tuple[int, str, str], list[_Rerun]] = defaultdict(list)
    for rerun in reruns:
        candidates[(rerun.workload_id, rerun.gpu, rerun.mode)].append(rerun)
    strict_only = {
        r.workload_id
        for r in reported
        if not any(
            c.protocol == RERUN_PROTOCOL_FAITHFUL_NAME for c in candidates[(r.workload_id, _gpu(r), _mode(r) or "")]
        )
    }
    neutral = _neutral_programs(session, strict_only)
    result = {}
    for run in reported:
        mode = _mode(run)
        assert mode is not None
        found = candidates[(run.workload_id, _gpu(run), mode)]
        faithful = [c for c in found if c.protocol == RERUN_PROTOCOL_FAITHFUL_NAME]
        strict = [c for c in found if c.protocol == RERUN_PROTOCOL_V2_NAME]
        result[run.id] = _judge(run, mode, faithful, strict, run.workload_id in neutral, bound)
    return result


def confirmation_of_run(session: Session, run: Run) -> Confirmation | None:
    """The confirmation of one reported KernelBench figure; None for any other run (a rerun, another source)."""
    return confirmations(session, [run]).get(run.id)


def confirmation_states(session: Session, run_names: Sequence[str]) -> dict[str, str]:
    """The confirmation state of each reported KernelBench figure among ``run_names`` (a leaderboard's
    rows), by run name; other runs are left out, and a list without such figures reads nothing more."""
    names = sorted(set(run_names))
    if not names:
        return {}
    runs = session.scalars(
        select(Run)
        .join(Source, Source.id == Run.source_id)
        .join(Implementation, Implementation.id == Run.implementation_id)
        .where(Run.name.in_(names), Source.slug == KERNELBENCH, Implementation.name.in_(MODES))
        .options(
            joinedload(Run.source),
            joinedload(Run.implementation),
            joinedload(Run.environment),
            joinedload(Run.workload),
        )
    ).all()
    return {c.run_name: c.state for c in confirmations(session, runs).values()}


def contradicted_figures(session: Session) -> tuple[list[Confirmation], list[Confirmation], SpreadBound]:
    """(contradicted, confirmed): every reported KernelBench figure that a rerun checks, the contradicted
    ones largest departure first, and the bound used."""
    with_reruns = select(Run.workload_id).join(RerunResult, RerunResult.run_id == Run.id)
    runs = session.scalars(
        select(Run)
        .join(Source, Source.id == Run.source_id)
        .join(Implementation, Implementation.id == Run.implementation_id)
        .where(Source.slug == KERNELBENCH, Implementation.name.in_(MODES), Run.workload_id.in_(with_reruns))
        .options(
            joinedload(Run.source),
            joinedload(Run.implementation),
            joinedload(Run.environment),
            joinedload(Run.workload),
        )
    ).all()
    bound = spread_bound(session)
    checked = list(confirmations(session, runs, bound).values())
    contradicted = sorted(
        (c for c in checked if c.state == CONTRADICTED), key=lambda c: (-c.departure, c.workload, c.run_name)
    )
    confirmed = sorted((c for c in checked if c.state not in {CONTRADICTED, UNCHECKED}), key=lambda c: c.run_name)
    return contradicted, confirmed, bound


def _judge(
    run: Run, mode: str, faithful: list[_Rerun], strict: list[_Rerun], neutral: bool, bound: SpreadBound
) -> Confirmation:
    checking, protocol = (faithful, RERUN_PROTOCOL_FAITHFUL_NAME) if faithful else (strict, RERUN_PROTOCOL_V2_NAME)
    if not faithful and strict and not neutral:
        return _confirmation(run, mode, bound, UNCHECKED, [], None, None, STRICT_REASON)
    if not checking:
        reason = "No KernelIndex rerun has measured this program in this mode on this GPU model."
        return _confirmation(run, mode, bound, UNCHECKED, [], None, None, reason)
    rerun_ns = round(statistics.median(c.latency_ns for c in checking))
    state, ratio = confirmation_state(run.latency_ns, rerun_ns, bound.bound)
    how = (
        "source-faithful reruns (KernelBench's settings)"
        if faithful
        else "strict v2 reruns, whose settings do not differ from KernelBench's for a program without convolutions "
        "or recurrent layers"
    )
    verdict = "within" if state != CONTRADICTED else "outside"
    reason = (
        f"Checked by {len(checking)} {how} on the same GPU model: the reported figure is {ratio:.3f}× theirs, "
        f"{verdict} the bound of {bound.rule}."
    )
    return _confirmation(run, mode, bound, state, checking, ratio, protocol, reason)


def _confirmation(
    run: Run,
    mode: str,
    bound: SpreadBound,
    state: str,
    checking: list[_Rerun],
    ratio: float | None,
    protocol: str | None,
    reason: str,
) -> Confirmation:
    return Confirmation(
        run_id=run.id,
        run_name=run.name,
        state=state,
        by_runs=tuple(sorted(c.name for c in checking)),
        ratio=ratio,
        bound=bound.bound,
        bound_rule=bound.rule,
        reported_ns=run.latency_ns,
        rerun_ns=round(statistics.median(c.latency_ns for c in checking)) if checking else None,
        checked_under=protocol,
        reason=reason,
        gpu=_gpu(run),
        workload=run.workload.name,
        mode=mode,
    )


def _mode(run: Run) -> str | None:
    name = run.implementation.name
    return name if name in MODES else None


def _gpu(run: Run) -> str:
    return run.environment.gpu_slug


def _reruns(session: Session, workload_ids: set[int] | None) -> list[_Rerun]:
    """Passing, standing KernelBench reruns under the faithful protocol or strict v2 (of ``workload_ids``)."""
    query = (
        select(
            Run.name,
            Run.workload_id,
            Environment.gpu_slug,
            Implementation.name,
            Protocol.name,
            Run.latency_ns,
            RerunBundle.session_id,
            Run.implementation_id,
        )
        .join(RerunResult, RerunResult.run_id == Run.id)
        .join(RerunBundle, RerunBundle.id == RerunResult.bundle_id)
        .join(Environment, Environment.id == Run.environment_id)
        .join(Implementation, Implementation.id == Run.implementation_id)
        .join(Protocol, Protocol.id == Run.protocol_id)
        .join(Workload, Workload.id == Run.workload_id)
        .where(
            Protocol.name.in_([RERUN_PROTOCOL_FAITHFUL_NAME, RERUN_PROTOCOL_V2_NAME]),
            Workload.name.like(f"{KERNELBENCH}-%"),
            Run.status == RunStatus.PASSED,
            Run.withdrawn_at.is_(None),
        )
    )
    if workload_ids is not None:
        query = query.where(Run.workload_id.in_(workload_ids))
    found = []
    for name, workload_id, gpu, implementation, protocol, latency_ns, session_id, implementation_id in session.execute(
        query
    ):
        mode = next((m for m in MODES if implementation.startswith(f"{m}-")), None)
        if mode is not None:
            found.append(_Rerun(name, workload_id, gpu, mode, protocol, latency_ns, session_id, implementation_id))
    return found


def _neutral_programs(session: Session, workload_ids: set[int]) -> set[int]:
    """Those of ``workload_ids`` whose reference program strict v2 computes as KernelBench's settings do."""
    if not workload_ids:
        return set()
    neutral = set()
    for workload_id, manifest_json in session.execute(
        select(Workload.id, Workload.manifest_json).where(Workload.id.in_(workload_ids))
    ):
        reference = json.loads(manifest_json)["spec"].get("definition", {}).get("reference", {})
        code = reference.get("code")
        if isinstance(code, str) and settings_neutral(code):
            neutral.add(workload_id)
    return neutral
