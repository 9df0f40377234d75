import sys

from pymc_bnn.cli import main

sys.exit(main())
