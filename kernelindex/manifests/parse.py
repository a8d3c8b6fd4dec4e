"""Parsing untrusted JSON into manifests, with errors a person can act on."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from kernelindex.manifests.kinds import API_VERSION, KINDS, Manifest


class ManifestError(ValueError):
    """A manifest failed validation; ``problems`` lists ``(field path, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{path}: {message}" if path else message for path, message in problems))


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        elif item["type"] == "missing":
            message = "required field is missing"
        problems.append((path, message.removeprefix("Value error, ")))
    return problems


def parse_manifest(data: Any) -> Manifest:
    """Validate plain JSON as a manifest of the kind it names.

    Raises ``ManifestError`` naming every offending field (``spec.timing.latencyNs.mean``).
    """
    if not isinstance(data, dict):
        raise ManifestError([("", "a manifest must be a JSON object")])
    if data.get("apiVersion") != API_VERSION:
        raise ManifestError([("apiVersion", f"must be {API_VERSION!r}, got {data.get('apiVersion')!r}")])
    kind = data.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ManifestError([("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(_problems(exc)) from None


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one kind, generated from its model."""
    model = KINDS[kind]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://kernelindex.dev/schemas/v1alpha1/{kind}.json"
    return schema
