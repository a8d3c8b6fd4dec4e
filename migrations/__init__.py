"""The Alembic migrations, shipped as kernelindex.migrations (see pyproject.toml)."""
