"""JAX's reading of a boolean environment variable (``bool_env``), for the flags read at import.

Layer: kernel (bottom). Imports only the standard library. The flags that must hold before the
configuration loads (``JAX_ENABLE_X64`` in ``kernel.dtypes``, ``JAX_CHECK_TRACER_LEAKS`` in
``kernel.leaks``, ``JAX_DISABLE_MOST_OPTIMIZATIONS`` in ``xla_bridge.executables``) and the
configuration's own start from the environment (``funcgrad/_config_flags.py``) read the same words.
"""

from __future__ import annotations

import os

TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


def truth_value(name: str, text: str) -> bool:
    """``text`` (the value of the variable ``name``) as JAX's ``bool_env`` reads it: y/yes/t/true/
    on/1 and n/no/f/false/off/0 in any case, anything else JAX's ValueError.

    >>> truth_value("JAX_ENABLE_X64", "True"), truth_value("JAX_ENABLE_X64", "0")
    (True, False)
    """
    word = text.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"invalid truth value {word!r} for environment {name!r}")  # (JAX's words)


def bool_env(name: str, default: bool) -> bool:
    """The environment variable ``name`` read as JAX's ``bool_env`` does, ``default`` when unset.

    >>> bool_env("FUNCGRAD_A_VARIABLE_NOBODY_SETS", False)
    False
    """
    text = os.environ.get(name)
    return default if text is None else truth_value(name, text)
