"""Controlled reruns: re-measure open implementations of a workload on a real GPU and sign the evidence.

The package is self-contained so that it runs on a GPU machine with nothing but torch, triton,
numpy, cryptography and rfc8785 installed: it imports nothing from the web app, the database, the store or
the ingest adapters. Importing it (or `bundle`, `stats`, `roofline`, `cases`) does not import torch.
"""

RUNNER_VERSION = "0.2.0"  # 0.2: protocol v2 and KernelBench problems
