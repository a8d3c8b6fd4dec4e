import sys

from kernelindex.rerun.cli import main

sys.exit(main())
