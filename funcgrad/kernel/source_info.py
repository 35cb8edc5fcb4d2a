"""Source lines of staged equations: the user's line that made each, and the library's frames.

Layer: kernel (bottom). Imports the standard library and the kernel modules ``hooks`` and ``ir``;
``kernel.core`` re-exports its names (NOTE: [source info of re-interpreted equations] in
``kernel/partial_eval.py``).
"""

from __future__ import annotations

import itertools
import os
import sys

from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import SourceInfo


class _SourceInfoConfig:
    # Linearize stages many small equations on the eager grad path; their source lines are only
    # read by the debugging tools (memory_report, check_finite), which switch this on. (Under a
    # staging trace linearize records them anyway: see ``PartialEvalTrace``.)
    in_linearize = False
    # See NOTE: [source info of re-interpreted equations].
    override: SourceInfo | None = None
    # How many ``backward_pass`` calls are running (check_finite labels equations "backward").
    backward_depth = 0
    # The ``named_scope`` names entered, outermost first ("outer/inner"; funcgrad/_utilities.py).
    name_stack = ""
    # The XLA metadata in force (``set_xla_metadata``), sorted (key, value) pairs (NOTE: [xla metadata]).
    xla_metadata: tuple = ()


source_info_config = _SourceInfoConfig()

# Frames from the funcgrad package (and from directories the other layers register) are library
# frames, skipped when recording the user's line.
_FUNCGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def library_dir() -> str:
    """The directory of the ``funcgrad`` package (its own code, as opposed to the user's)."""
    return _FUNCGRAD_DIR


def user_source_info() -> SourceInfo | None:
    """The innermost frame outside the library: the user's line that created an equation (or the
    line of the equation being re-interpreted, see NOTE: [source info of re-interpreted
    equations])."""
    config = source_info_config
    override = config.override
    if override is not None:
        if config.xla_metadata:
            # The equation's own metadata over what is in force now, as JAX enters an equation's
            # context when it re-interprets it (NOTE: [xla metadata]).
            return override._replace(xla_metadata=merge_metadata(config.xla_metadata, override.xla_metadata))
        return override
    library = (_FUNCGRAD_DIR, *hooks.library_dirs)
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(library) and "<frozen" not in filename:
            # The column of the call being made, as JAX reports it (the instruction's position).
            pos = next(itertools.islice(frame.f_code.co_positions(), frame.f_lasti // 2, None), None)
            column = pos[2] if pos is not None else None
            # (The qualified name, ``outer.<locals>.f``, as JAX names the function.)
            return SourceInfo(
                filename,
                frame.f_lineno,
                frame.f_code.co_qualname,
                config.name_stack,
                column,
                config.xla_metadata,
            )
        frame = frame.f_back
    if config.xla_metadata:
        return SourceInfo("<unknown>", 0, "<unknown>", config.name_stack, None, config.xla_metadata)
    return None


def merge_metadata(base: tuple, updates) -> tuple:
    """XLA metadata ``base`` updated by ``updates`` (pairs or a dict; a None value removes its key,
    as JAX's ``update_metadata``), as sorted ``(key, value)`` pairs.

    >>> merge_metadata((("a", "b"), ("c", 1)), {"c": None, "d": True})
    (('a', 'b'), ('d', True))
    """
    merged = dict(base)
    merged.update(updates)
    return tuple(sorted((k, v) for k, v in merged.items() if v is not None))
