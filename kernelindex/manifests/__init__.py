"""Canonical manifests: the Pydantic kinds, their digests and JSON Schemas.

Free of database and web code, so a reader can validate and digest manifests with this
package alone.
"""

from kernelindex.manifests.digest import canonical_json, is_digest, manifest_digest, sha256_digest
from kernelindex.manifests.kinds import (
    API_VERSION,
    KINDS,
    Attestation,
    BenchmarkProtocol,
    BenchmarkRun,
    ExecutionEnvironment,
    Implementation,
    Manifest,
    Metadata,
    WorkloadSuite,
)
from kernelindex.manifests.parse import ManifestError, json_schema, parse_manifest

__all__ = [
    "API_VERSION",
    "KINDS",
    "Attestation",
    "BenchmarkProtocol",
    "BenchmarkRun",
    "ExecutionEnvironment",
    "Implementation",
    "Manifest",
    "ManifestError",
    "Metadata",
    "WorkloadSuite",
    "canonical_json",
    "is_digest",
    "json_schema",
    "manifest_digest",
    "parse_manifest",
    "sha256_digest",
]
