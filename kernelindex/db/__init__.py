"""The relational store's schema and connection helpers (no queries live here).

Every table module is imported here, so that importing any one of them puts the whole schema on
``Base.metadata``: relationships named by class resolve, and migrations and backups see every table.
"""

from kernelindex.db import (  # noqa: F401  (each registers its tables)
    account_tables,
    regression_tables,
    rerun_tables,
    search_tables,
    submission_tables,
    tables,
    tally_tables,
)
