"""Every query and every write of the registry; routes and the CLI never build SQL."""

# Registers the listeners that increase the catalogue version on every write.
from kernelindex.store import version as version
