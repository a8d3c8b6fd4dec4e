"""The relational store's schema and connection helpers (no queries live here)."""
