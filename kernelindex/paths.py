"""Where the bundled files live: templates, static files, migrations and the data a first start loads.

Each folder is a package of its own (``kernelindex.templates``, ``kernelindex.static``,
``kernelindex.migrations``, ``kernelindex.fixtures``), kept at the top of the repository and mapped
into the package by ``pyproject.toml``. Asking the import system where a package is gives the right
folder for both kinds of install, with no second guess: the copy in site-packages for a wheel, the
repository's folder for an editable install.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def _package_folder(package: str) -> Path:
    folder = files(package)
    # Jinja's loader, Starlette's StaticFiles and Alembic read real folders, not a zip file's members.
    if not isinstance(folder, Path):
        raise RuntimeError(f"{package} is not installed as a folder on disk: {folder}")
    return folder


TEMPLATES = _package_folder("kernelindex.templates")
STATIC = _package_folder("kernelindex.static")
MIGRATIONS = _package_folder("kernelindex.migrations")
BUNDLED_DATA = _package_folder("kernelindex.fixtures")
BUNDLED_SNAPSHOT = BUNDLED_DATA / "sol-execbench"
BUNDLED_RERUNS = BUNDLED_DATA / "reruns"
