"""Whether to use the optional C modules (NOTE: [array in C] in ``funcgrad/kernel/array.py``).

Layer: kernel (bottom). Imports only the standard library. Each user imports its own C module
with an import statement (so the import graph and the layer contracts see it), guarded by this
check and by ``contextlib.suppress(ImportError)`` for a build without them.
"""

from __future__ import annotations

import os


def c_modules_wanted() -> bool:
    """False when ``FUNCGRAD_PURE_PYTHON`` is set: then the Python twins of the C modules run
    (they also run where ``pip install`` found no C compiler and the modules are not built).

    >>> import os
    >>> c_modules_wanted() == (not os.environ.get("FUNCGRAD_PURE_PYTHON"))
    True
    """
    return not os.environ.get("FUNCGRAD_PURE_PYTHON")
