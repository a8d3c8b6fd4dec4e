"""The page templates, shipped inside the installed package as kernelindex.templates (see pyproject.toml)."""
