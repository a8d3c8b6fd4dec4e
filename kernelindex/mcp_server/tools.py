"""The MCP tools: each asks the registry through ``kernelindex.client`` and answers plain JSON
whose every record carries its permalink (``url``), so an agent can cite what it used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelindex import urls
from kernelindex.client import CITATION_FORMATS, Client, NotFoundError

Answer = dict[str, Any]


class ToolRefusal(Exception):
    """A question the registry could not answer; the message says why, for the agent."""


def _ms(ns: int | None) -> float | None:
    return None if ns is None else round(ns / 1e6, 6)


class RegistryTools:
    """The tools over one registry; ``client`` is made per call, so a long-lived server holds no connection."""

    def __init__(self, client: Callable[[], Client]):
        self._client = client

    def search(self, query: str, gpu: str | None = None, limit: int = 10) -> Answer:
        with self._client() as client:
            found = client.search(query, gpu=gpu, limit=max(1, min(limit, 50)))
            return {
                "query": found.query,
                "gpu": found.gpu,
                "didYouMean": found.did_you_mean,
                "hits": [
                    {
                        "kind": hit.kind,
                        "slug": hit.slug,
                        "title": hit.title,
                        "subtitle": hit.subtitle,
                        "url": client.permalink(hit.url),
                        **({"onGpu": _fastest(client, hit.on_gpu.fastest)} if hit.on_gpu else {}),
                    }
                    for hit in found.hits
                ],
            }

    def fastest(
        self, workload_or_query: str, gpu: str | None = None, case: str | None = None, limit: int = 5
    ) -> Answer:
        with self._client() as client:
            slug = workload_or_query.strip()
            try:
                top = client.workload_top(slug, gpu=gpu, case=case, limit=max(1, min(limit, 50)))
            except NotFoundError:
                # Not a workload's slug: the best workload hit for the words (on the GPU, if named).
                hits = [h for h in client.search(slug, gpu=gpu, kinds=["workload"], limit=1).hits]
                if not hits:
                    raise ToolRefusal(f"No workload is named or described by {workload_or_query!r}.") from None
                top = client.workload_top(hits[0].slug, gpu=gpu, case=case, limit=max(1, min(limit, 50)))
            return {
                "workload": top.workload,
                "workloadTitle": top.workload_title,
                "gpu": top.gpu,
                "gpuProduct": top.gpu_product,
                "case": top.case.model_dump(by_alias=True) if top.case else None,
                "metric": top.metric,
                "unit": "ms",
                "statistic": top.statistic,
                "protocol": top.protocol_title,
                "environment": top.environment_label,
                "rankedTotal": top.ranked_total,
                "ranked": [
                    {
                        "rank": entry.rank,
                        "implementation": entry.implementation,
                        "latencyMs": _ms(entry.latency_ns),
                        "latencyNs": entry.latency_ns,
                        "vsBest": entry.vs_best,
                        "evidence": entry.evidence,
                        "measuredBy": entry.source,
                        "run": entry.run,
                        "url": client.permalink(entry.url),
                    }
                    for entry in top.entries
                ],
                "url": client.permalink(top.url),
                "citationUrl": client.permalink(top.citation_url),
            }

    def run(self, name: str) -> Answer:
        with self._client() as client:
            run = client.run(name)
            return {
                "name": run.name,
                "digest": run.digest,
                "workload": run.workload,
                "implementation": run.project,
                "revision": run.revision,
                "gpu": run.gpu,
                "environment": run.environment,
                "protocol": run.protocol,
                "metric": "latency",
                "unit": "ms",
                "statistic": run.primary_statistic,
                "latencyMs": _ms(run.latency_ns),
                "latencyNs": run.latency_ns,
                "rank": run.rank,
                "groupSize": run.group_size,
                "vsBest": run.vs_best,
                "status": run.status,
                "evidence": run.evidence,
                "measuredBy": run.source.name if run.source else None,
                "eligible": run.eligible,
                "ineligibilityReasons": run.ineligibility_reasons,
                "observedAt": run.observed_at.isoformat(),
                "availability": run.availability.text,
                "url": client.permalink(run.url),
                "citationUrl": client.permalink(urls.run_citation(run.name, "bib")),
            }

    def compare(self, runs: list[str]) -> Answer:
        if not 2 <= len(runs) <= 8:
            raise ToolRefusal(f"compare takes 2 to 8 run names; got {len(runs)}.")
        with self._client() as client:
            result = client.compare(runs)
            return {
                "verdict": result.verdict,
                "comparable": result.comparable,
                "winner": result.winner,
                "reasons": result.reasons,
                "runs": [{"name": c.name, "latency": c.latency, "url": client.permalink(c.url)} for c in result.runs],
                "fields": [{"label": f.label, "values": f.display, "differs": f.differs} for f in result.fields],
                "url": client.permalink(urls.compare(runs)),
            }

    def cite(self, ref: str, format: str = "text") -> Answer:
        if format not in CITATION_FORMATS:
            raise ToolRefusal(f"format is one of {', '.join(CITATION_FORMATS)}; not {format!r}.")
        with self._client() as client:
            try:
                text, of = client.citation(ref, format, of="run"), "run"
            except NotFoundError:
                text, of = client.citation(ref, format, of="workload"), "workload"
            page = urls.run(ref) if of == "run" else urls.workload(ref)
            return {"ref": ref, "of": of, "format": format, "citation": text, "url": client.permalink(page)}

    def regressions(
        self,
        gpu: str | None = None,
        framework: str | None = None,
        workload: str | None = None,
        kernel: str | None = None,
        page: int = 1,
    ) -> Answer:
        with self._client() as client:
            found = client.regressions(gpu=gpu, framework=framework, workload=workload, kernel=kernel, page=page)
            return {
                "total": found.total,
                "page": found.page,
                "pageCount": found.page_count,
                "metric": "latency",
                "unit": "ms",
                "regressions": [
                    {
                        "workload": row.workload,
                        "workloadTitle": row.workload_title,
                        "case": row.case_label,
                        "gpu": row.gpu,
                        "framework": row.framework,
                        "kernel": row.kernel,
                        "newerVersion": row.newer_version,
                        "newerLatencyMs": _ms(row.newer_latency_ns),
                        "newerRunUrl": client.permalink(row.newer_run_url),
                        "olderVersion": row.older_version,
                        "olderLatencyMs": _ms(row.older_latency_ns),
                        "olderRunUrl": client.permalink(row.older_run_url),
                        "slowdown": row.slowdown,
                        "url": client.permalink(row.workload_url),
                    }
                    for row in found.regressions
                ],
                "url": client.permalink(
                    urls.regressions(gpu=gpu, framework=framework, workload=workload, kernel=kernel, page=page)
                ),
            }

    def gpu_coverage(self, gpu: str) -> Answer:
        with self._client() as client:
            detail = client.gpu(gpu)
            return {
                "gpu": detail.slug,
                "product": detail.product,
                "vendor": detail.vendor,
                "runs": detail.runs,
                "workloadsMeasured": detail.workloads,
                "gaps": detail.gaps,
                "bySource": [
                    {
                        "source": s.source_name,
                        "workloadsMeasured": s.workloads,
                        "gaps": s.gaps,
                        "sourceWorkloads": s.source_workloads,
                    }
                    for s in detail.by_source
                ],
                "url": client.permalink(detail.url),
                "workloadsApiUrl": client.permalink(detail.workloads_url),
            }


def _fastest(client: Client, best: Any) -> Answer | None:
    if best is None:
        return None
    return {
        "run": best.run,
        "implementation": best.project,
        "latencyMs": _ms(best.latency_ns),
        "statistic": best.primary_statistic,
        "evidence": best.evidence,
        "url": client.permalink(urls.run(best.run)),
    }
