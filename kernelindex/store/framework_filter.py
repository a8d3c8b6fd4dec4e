"""Choosing runs by the framework and version a sweep source records (AIConfigurator's
``framework`` and ``version`` metrics): the filter of a workload's per-case ranking and sweep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class UnknownFramework(ValueError):
    """A framework or version the runs of the comparison group do not name."""


@dataclass(frozen=True)
class FrameworkSelection:
    """The runs of one framework (as the source names it, e.g. "vLLM"), of one version of it, or of
    one version under any framework; every run when both are ``None``."""

    framework: str | None = None
    version: str | None = None

    def admits(self, framework: str | None, version: str | None) -> bool:
        return (self.framework is None or framework == self.framework) and (
            self.version is None or version == self.version
        )

    @property
    def chosen(self) -> bool:
        return self.framework is not None or self.version is not None


def checked_selection(
    choices: Mapping[str, Sequence[str]], framework: str | None, version: str | None
) -> FrameworkSelection:
    """The selection ``framework`` and ``version`` name among ``choices`` (framework → its versions),
    with the framework written as the source writes it ("vllm" gives "vLLM"); ``UnknownFramework``,
    naming what there is, for anything the runs do not name."""
    if framework is None and version is None:
        return FrameworkSelection()
    if not choices:
        raise UnknownFramework("the runs of this comparison group name no framework or version to filter by.")
    if framework is not None:
        matched = next((name for name in choices if name.casefold() == framework.casefold()), None)
        if matched is None:
            raise UnknownFramework(
                f"framework {framework!r} has no run in this comparison group; frameworks here: {', '.join(choices)}."
            )
        framework = matched
    versions = choices[framework] if framework else sorted({v for vs in choices.values() for v in vs})
    if version is not None and version not in versions:
        whose = f"{framework} has" if framework else "the runs have"
        raise UnknownFramework(
            f"version {version!r} is not one {whose} in this comparison group; versions: {', '.join(versions)}."
        )
    return FrameworkSelection(framework, version)
