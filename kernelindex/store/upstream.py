"""Where a run's figures can be read at their source: the record a reader checks them against.

SOL-ExecBench: the kernel's public leaderboard for the run's GPU. KernelBench: the timing file at
the commit that published it. Liger-Kernel: the benchmark data file at the ref it was read at (the
one its workload's benchmark script names). A controlled rerun: its signed bundle, as imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelindex import urls
from kernelindex.db.tables import Run
from kernelindex.store.manifests import environment_manifest, run_manifest, workload_manifest


@dataclass(frozen=True)
class UpstreamRecord:
    label: str  # what the link opens, in words
    url: str
    # What the run's own date is at this source: when it was published there, or when it was measured.
    dated: str = "Published"


_GITHUB_REF = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/([^/]+)/")


def upstream_record(run: Run) -> UpstreamRecord | None:
    """The source's own record of ``run``; ``None`` where the source has no page for it."""
    source = run.source
    native = run_manifest(run).spec.source_native
    if source is None or native is None:
        return None
    metrics = native.metrics
    if source.slug == "sol-execbench":
        gpu = environment_manifest(run.environment).spec.hardware.product.removeprefix("NVIDIA ")
        kernel = run.workload.external_id
        return UpstreamRecord(
            f"Kernel {kernel} on the SOL-ExecBench leaderboard ({gpu})",
            f"{source.url.rstrip('/')}/leaderboard/kernel/{kernel}/{gpu}",
        )
    if source.slug == "kernelbench" and isinstance(metrics.get("commit"), str) and isinstance(metrics.get("file"), str):
        commit, path = str(metrics["commit"]), str(metrics["file"])
        return UpstreamRecord(f"{path} at commit {commit[:10]}", f"{source.url.rstrip('/')}/blob/{commit}/{path}")
    if source.slug == "liger-kernel" and isinstance(metrics.get("file"), str):
        path = str(metrics["file"]).split(", ")[0]
        reference = workload_manifest(run.workload).spec.definition.reference
        found = _GITHUB_REF.match(str(reference.url or "")) if reference else None
        ref = found.group(1) if found else "main"
        return UpstreamRecord(f"{path} at {ref}", f"{source.url.rstrip('/')}/blob/{ref}/{path}", dated="Measured")
    if source.slug == "kernelindex-reruns":
        return UpstreamRecord(
            f"Signed bundle {native.external_id}", urls.rerun_bundle(native.external_id), dated="Measured"
        )
    return None
