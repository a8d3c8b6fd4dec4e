"""Every query and every write of the registry; routes and the CLI never build SQL."""
