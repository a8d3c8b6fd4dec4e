"""``/figures``: what each kind of figure on the site is (``docs/FIGURES.md``, from ``kernelindex.figures``)."""

from __future__ import annotations

from typing import ClassVar

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kernelindex import figures
from kernelindex.web.pages import PageContext, Part, page_route, render_page

router = APIRouter()


class FigureKindPart(Part):
    key: str
    label: str
    unit: str
    number_type: str
    definition: str
    anchor: str
    written: str
    statistic: str
    comes_from: str
    example: str


class BoundPart(Part):
    key: str
    name: str
    description: str


class FiguresPage(PageContext):
    template: ClassVar[str] = "figures.html"

    introduction: str
    kinds: list[FigureKindPart]
    bounds: list[BoundPart]
    types: str


@page_route(router, "/figures")
def figures_page(request: Request) -> Response:
    context = FiguresPage(
        introduction=figures.INTRODUCTION,
        kinds=[
            FigureKindPart(
                key=kind.key,
                label=kind.label,
                unit=kind.unit,
                number_type=kind.number_type,
                definition=kind.definition,
                anchor=kind.anchor,
                written=kind.written,
                statistic=kind.statistic,
                comes_from=kind.comes_from,
                example=kind.example,
            )
            for kind in figures.FIGURES
        ],
        bounds=[BoundPart(key=b.key, name=b.name, description=b.description) for b in figures.BOUNDS.values()],
        types=figures.JSON_NOTE.replace("`", ""),
    )
    return render_page(request, context)
