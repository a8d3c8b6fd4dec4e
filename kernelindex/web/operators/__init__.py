"""Other operators' reruns: a maintainer approves an operator's runner key (``/admin/runner-keys``),
and the operator uploads the bundles it signs (``POST /api/v1/reruns``)."""

from __future__ import annotations

from fastapi import APIRouter

from kernelindex.web.operators import keys, uploads

router = APIRouter()
router.include_router(uploads.router)
router.include_router(keys.router)
