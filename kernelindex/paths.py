"""Where the project's bundled files live (the repository root of an editable install)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = PROJECT_ROOT / "templates"
STATIC = PROJECT_ROOT / "static"
BUNDLED_SNAPSHOT = PROJECT_ROOT / "fixtures" / "sol-execbench"
BUNDLED_RERUNS = PROJECT_ROOT / "fixtures" / "reruns"
