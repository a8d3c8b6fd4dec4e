"""A sequence whose items are made when read.

A long sweep has thousands of cases and a page shows a window of them: what a page says of each
case (its label, how many runs measured it) is made for the cases it shows, not for all.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar, overload

Item = TypeVar("Item")


class MadeWhenRead(Sequence[Item]):
    """``length`` items, item ``i`` made by ``_make(i)`` each time it is read."""

    def __init__(self, length: int):
        self._length = length

    @abstractmethod
    def _make(self, index: int) -> Item: ...

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, position: int) -> Item: ...
    @overload
    def __getitem__(self, position: slice) -> Sequence[Item]: ...
    def __getitem__(self, position: int | slice) -> Item | Sequence[Item]:
        if isinstance(position, slice):
            return [self._make(index) for index in range(self._length)[position]]
        return self._make(range(self._length)[position])
