"""Where the optional C modules are found (NOTE: [array in C] in ``funcgrad/kernel/array.py``).

Layer: kernel (bottom). Imports only the standard library; the module it loads is named by its
caller (the kernel's ``_array_base``, the bridge's ``_hot_call``), so no import points upward.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def load_c_module(name: str) -> ModuleType | None:
    """The built C module ``name``, or None: where ``pip install`` found no C compiler (the
    module was not built) or ``FUNCGRAD_PURE_PYTHON`` is set. The caller then uses the same code
    in Python.

    >>> load_c_module("funcgrad.kernel._no_such_module") is None
    True
    """
    if os.environ.get("FUNCGRAD_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
