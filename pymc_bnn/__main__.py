import sys

from pymc_bnn.cli._main import main

sys.exit(main())
