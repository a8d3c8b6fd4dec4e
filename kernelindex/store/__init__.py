"""Every query and every write of the registry; routes and the CLI never build SQL."""

# Registers the listeners that increase the catalogue version on every write.
# Registers the listeners that keep the workload tallies exact.
from kernelindex.store import tallies as tallies
from kernelindex.store import version as version
