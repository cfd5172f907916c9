"""``python -m batsched_ml.cli``: the ``batsched-ml`` program."""

import sys

from .process import main

sys.exit(main())
