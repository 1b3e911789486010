"""``python -m dpamp``: the command line (see ``dpamp --help``)."""
import sys

from .cli import main

sys.exit(main())
