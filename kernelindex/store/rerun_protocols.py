"""The rerun protocols KernelIndex publishes, as manifests, one per version of the runner's protocol.

The importer stores a version's manifest with the first bundle measured under it; until then the
protocol's page is still served from here, so a version is readable before anyone has run it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kernelindex.manifests import API_VERSION, BenchmarkProtocol
from kernelindex.rerun import protocol as rerun_protocol_v1
from kernelindex.rerun import protocol_faithful as rerun_protocol_faithful
from kernelindex.rerun import protocol_v2 as rerun_protocol_v2

SPECS = {
    f"{module.PROTOCOL_NAME}-v{module.PROTOCOL_VERSION}": module.protocol_spec
    for module in (rerun_protocol_v1, rerun_protocol_v2, rerun_protocol_faithful)
}
RERUN_PROTOCOL_NAMES = frozenset(SPECS)
RERUN_PROTOCOL_V2_NAME = f"{rerun_protocol_v2.PROTOCOL_NAME}-v{rerun_protocol_v2.PROTOCOL_VERSION}"
# The source-faithful protocol: a KernelBench program under KernelBench's own settings, v2's timer.
RERUN_PROTOCOL_FAITHFUL_NAME = f"{rerun_protocol_faithful.PROTOCOL_NAME}-v{rerun_protocol_faithful.PROTOCOL_VERSION}"
# Protocols measured with v2's timer, statistics and noise gate, whose bundles the importer rechecks alike.
V2_TIMER_PROTOCOLS = frozenset({RERUN_PROTOCOL_V2_NAME, RERUN_PROTOCOL_FAITHFUL_NAME})
# Each published version and the one that replaced it: v1's timer let host time into the interval.
SUCCESSORS = {f"{rerun_protocol_v1.PROTOCOL_NAME}-v{rerun_protocol_v1.PROTOCOL_VERSION}": RERUN_PROTOCOL_V2_NAME}


def superseded_by(protocol: str, measured_under: Collection[str]) -> str | None:
    """The newer rerun protocol that replaced ``protocol``, where a workload's reruns were also measured
    under it (``measured_under``: the protocol names of its comparison groups); None otherwise. The
    older runs stay, in their own group, labelled as superseded."""
    successor = SUCCESSORS.get(protocol)
    return successor if successor in measured_under else None


def published_name(spec: Mapping[str, Any]) -> str | None:
    """The name of the published rerun protocol whose spec is exactly `spec` (as a bundle carries it)."""
    return next((name for name, published in SPECS.items() if published() == spec), None)


def rerun_protocol_manifest(spec: Mapping[str, Any]) -> BenchmarkProtocol:
    """The BenchmarkProtocol manifest of one version, from the spec the runner copies into its bundles. A
    spec that names its own title and comparability family (the source-faithful protocol) keeps them."""
    correctness = spec["correctness"]
    version = spec["version"]
    return BenchmarkProtocol.model_validate(
        {
            "apiVersion": API_VERSION,
            "kind": "BenchmarkProtocol",
            "metadata": {
                "name": f"{spec['name']}-v{version}",
                "title": spec.get("title", f"KernelIndex rerun protocol v{version}"),
            },
            "spec": {
                "harness": {"name": "KernelIndex rerun runner", "version": version},
                "correctness": {
                    "reference": f"KernelIndex reference implementation, {correctness['referenceDtype']}",
                    "comparator": "elementwise |out - ref| <= atol + rtol * |ref|, matched-element ratio",
                    "tolerance": {
                        "atol": correctness["atol"],
                        "rtol": correctness["rtol"],
                        "matchedRatio": correctness["matchedRatio"],
                    },
                },
                "measurement": {
                    "timer": spec["timer"],
                    "primaryStatistic": spec["primaryStatistic"],
                    "warmupIterations": spec["warmupIterations"],
                    "timedIterations": spec["timedIterations"],
                    "trials": spec["trials"],
                    "l2Flush": True,
                },
                "comparability": {"family": spec.get("family", "kernelindex_rerun"), "notes": spec["notes"]},
            },
        }
    )


def published_rerun_protocol(name: str) -> BenchmarkProtocol | None:
    """The manifest of the published rerun protocol named `name` (e.g. ``kernelindex-rerun-v2``), if any."""
    spec = SPECS.get(name)
    return rerun_protocol_manifest(spec()) if spec is not None else None
