"""(routes of this page family are added here)"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
