"""The stylesheets, scripts and vendored Swagger UI, shipped as kernelindex.static (see pyproject.toml)."""
