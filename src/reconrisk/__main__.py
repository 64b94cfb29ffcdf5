"""``python -m reconrisk`` runs the command line."""

import sys

from ._src.cli import main

sys.exit(main())
