"""KernelIndex: a registry of GPU-kernel benchmark results with evidence levels, digests and citations."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kernelindex")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
