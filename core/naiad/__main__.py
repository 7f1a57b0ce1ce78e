"""``python -m naiad ...``: the ``naiad`` command."""
import sys

from .cli import main

sys.exit(main())
