"""Ingestion: a source-neutral runner and one adapter per upstream."""
