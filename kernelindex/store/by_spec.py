"""Values worked out from the spec of a stored manifest, kept by its digest.

A digest covers a manifest's apiVersion, kind and spec, never its metadata, so whatever is
worked out from the spec alone is named exactly by it. Kept so, a page that finds the value
neither reads the manifest's text from the database (the pages that use this defer it: a
sweep's run is up to 300 kB) nor hashes that text to find the parsed manifest, as
``load_manifest`` must, whose key holds the text because metadata differs between records
that share a spec.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Generic, TypeVar

from kernelindex.store.manifests import Stored

Value = TypeVar("Value")


class BySpec(Generic[Value]):
    """``work_out(record, *extra)``, kept for the ``size`` digests (with ``extra``) used last.

    ``work_out`` must read nothing of ``record`` but its manifest's spec (its text is read on a
    miss only). Shared between requests and threads: return values nobody changes."""

    def __init__(self, work_out: Callable[..., Value], size: int):
        self._work_out = work_out
        self._size = size
        self._values: OrderedDict[tuple[Hashable, ...], Value] = OrderedDict()
        self._lock = Lock()

    def __call__(self, record: Stored, *extra: Hashable) -> Value:
        key = (record.digest, *extra)
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = self._work_out(record, *extra)
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value
