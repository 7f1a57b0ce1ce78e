"""naiad's conformance suite: every backend plugin checked against numpy and the reference
executor. Run ``pytest conformance --backend=NAME`` in a checkout, or ``naiad conformance
--backend=NAME`` where naiad is installed (the suite ships as the package ``naiad_conformance``)."""
import os

#: folder of the suite, for ``naiad conformance``
SUITE_DIR = os.path.dirname(os.path.abspath(__file__))
