"""``funcgrad.extend.source_info_util``: where staged equations come from (user line, name stack).

Layer: surface. Imports the kernel (``core``: the source-info state every staged equation reads,
``ir``: ``SourceInfo``; ``funcgrad.kernel.register`` for excluded library paths).

funcgrad records, for each staged equation, the innermost frame outside library code and the
``named_scope`` names around it (``kernel.core.user_source_info``, NOTE: [source info of
re-interpreted equations]). This module is JAX's view of that state:

- the name stack is the one ``funcgrad.named_scope`` extends: ``extend_name_stack("f")`` is
  ``named_scope("f")``, ``current_name_stack()`` reads it, ``set_name_stack``/``reset_name_stack``
  replace it for a block, ``transform_name_stack("jvp")`` wraps the names staged inside as
  ``jvp(name)``, as JAX prints them;
- ``register_exclusion(path)`` makes frames of files under ``path`` library frames, skipped when
  an equation records the user's line (JAX hides them from tracebacks for the same reason);
- ``SourceInfo`` is the kernel's record (file, line, function, name stack) with JAX's
  ``name_stack``/``traceback``/``replace``; funcgrad keeps a line, not a whole traceback.

>>> import funcgrad, funcgrad.numpy as fnp
>>> def f(x):
...     with extend_name_stack("block"), transform_name_stack("jvp"), extend_name_stack("inner"):
...         return fnp.sin(x)
>>> print(funcgrad.make_jaxpr(f)(1.0).pretty_print(name_stack=True))
{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) } # [block/jvp(inner)]
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import NamedTuple

from funcgrad import kernel as _kernel
from funcgrad.kernel import core as _core
from funcgrad.kernel import ir as _ir
from funcgrad.kernel.core import source_info_config

__all__ = [
    "NameStack",
    "SourceInfo",
    "current",
    "current_name_stack",
    "extend_name_stack",
    "new_name_stack",
    "new_source_info",
    "register_exclusion",
    "reset_name_stack",
    "set_name_stack",
    "summarize",
    "transform_name_stack",
    "user_context",
]


class Scope(NamedTuple):
    name: str

    def wrap(self, stack: list[str]) -> list[str]:
        return [self.name, *stack]


class Transform(NamedTuple):
    name: str

    def wrap(self, stack: list[str]) -> list[str]:
        return [f"{self.name}({'/'.join(stack)})"] if stack else []


class NameStack:
    """An immutable stack of scope names and transformation names; ``str`` gives the text
    funcgrad records with each staged equation (transformations wrap the names inside them).

    >>> str(NameStack().extend("a").transform("vmap").extend("b"))
    'a/vmap(b)'
    """

    __slots__ = ("stack",)

    def __init__(self, stack: tuple = ()):
        self.stack = tuple(stack)

    def extend(self, name: str | tuple) -> NameStack:
        names = name if isinstance(name, tuple) else (name,)
        return NameStack(self.stack + tuple(Scope(n) for n in names))

    def transform(self, transform_name: str) -> NameStack:
        return NameStack((*self.stack, Transform(transform_name)))

    def __getitem__(self, idx: slice) -> NameStack:
        return NameStack(self.stack[idx])

    def __len__(self):
        return len(self.stack)

    def __add__(self, other: NameStack) -> NameStack:
        return NameStack(self.stack + other.stack)

    def __radd__(self, other: NameStack) -> NameStack:
        return NameStack(other.stack + self.stack)

    def __eq__(self, other):
        return isinstance(other, NameStack) and self.stack == other.stack

    def __hash__(self):
        return hash(self.stack)

    def __str__(self) -> str:
        names: list[str] = []
        for elem in reversed(self.stack):
            names = elem.wrap(names)
        return "/".join(names)

    def __repr__(self):
        return f"NameStack({str(self)!r})"


def new_name_stack(name: str = "") -> NameStack:
    """A name stack holding ``name`` (empty for ``""``).

    >>> str(new_name_stack("model"))
    'model'
    """
    return NameStack().extend(name) if name else NameStack()


class _Structured(threading.local):
    # The structured stack last set through this module, with the text it stands for: funcgrad's
    # state is the text (named_scope edits it), so the structure is trusted only while they agree.
    def __init__(self):
        self.stack = NameStack()
        self.text = ""


_structured = _Structured()


def current_name_stack() -> NameStack:
    """The name stack in effect (what ``named_scope`` and this module's managers set).

    >>> import funcgrad
    >>> with funcgrad.named_scope("outer"):
    ...     str(current_name_stack())
    'outer'
    """
    text = source_info_config.name_stack
    if text == _structured.text:
        return _structured.stack
    return NameStack(tuple(Scope(n) for n in text.split("/") if n))


class _NameStackContext:
    """Context manager and decorator running a block under the name stack ``make(current)``."""

    def __init__(self, make: Callable[[NameStack], NameStack]):
        self.make = make
        self.saved: list = []

    def __enter__(self):
        new = self.make(current_name_stack())
        self.saved.append((source_info_config.name_stack, _structured.stack, _structured.text))
        _structured.stack, _structured.text = new, str(new)
        source_info_config.name_stack = _structured.text
        return new

    def __exit__(self, *exc):
        source_info_config.name_stack, _structured.stack, _structured.text = self.saved.pop()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            with _NameStackContext(self.make):
                return func(*args, **kwargs)

        return wrapped


def extend_name_stack(name: str) -> _NameStackContext:
    """Add ``name`` to the name stack for a block (or a decorated function): ``named_scope``.

    >>> with extend_name_stack("a"), extend_name_stack("b"):
    ...     str(current_name_stack())
    'a/b'
    """
    return _NameStackContext(lambda stack: stack.extend(name))


def set_name_stack(name_stack: NameStack) -> _NameStackContext:
    """Replace the name stack for a block.

    >>> with set_name_stack(new_name_stack("x")):
    ...     str(current_name_stack())
    'x'
    """
    return _NameStackContext(lambda stack: name_stack)


def reset_name_stack() -> _NameStackContext:
    """Run a block with an empty name stack (a jaxpr traced inside is rooted afresh).

    >>> with extend_name_stack("a"), reset_name_stack():
    ...     str(current_name_stack())
    ''
    """
    return _NameStackContext(lambda stack: NameStack())


def transform_name_stack(name: str) -> _NameStackContext:
    """Mark the names staged inside the block as under the transformation ``name``
    (``jvp(inner)``); see the module docstring."""
    return _NameStackContext(lambda stack: stack.transform(name))


# ----------------------------------------------------------------------------------------------
# Source information


class SourceInfo(_ir.SourceInfo):
    """The kernel's source record (``file``, ``line``, ``function``, and ``name_stack`` as the
    text funcgrad prints; ``name_stack_obj`` is it as a ``NameStack``) with JAX's ``traceback``
    (``None``: funcgrad keeps the line, not a traceback) and ``replace``.

    >>> info = SourceInfo("f.py", 3, "f", "a").replace(name_stack=new_name_stack("b"))
    >>> str(info), info.traceback
    ('[b] f.py:3 (f)', None)
    """

    __slots__ = ()

    @property
    def traceback(self):
        return None

    @property
    def name_stack_obj(self) -> NameStack:
        return NameStack(tuple(Scope(n) for n in self.name_stack.split("/") if n))

    def replace(self, *, traceback=None, name_stack: NameStack | str | None = None) -> SourceInfo:
        del traceback
        if name_stack is None:
            return self
        return self._replace(name_stack=str(name_stack))


def new_source_info() -> SourceInfo:
    """An empty source record (no line, no names), as JAX's.

    >>> new_source_info().line
    0
    """
    return SourceInfo("<unknown>", 0, "<unknown>", "")


def current() -> SourceInfo:
    """The user's line calling this (the innermost frame outside library code and registered
    exclusions) and the current name stack.

    >>> info = current(); info.function, info.line > 0
    ('<module>', True)
    """
    info = _core.user_source_info()
    if info is None:
        return SourceInfo("<unknown>", 0, "<unknown>", source_info_config.name_stack)
    return SourceInfo(*info)


def summarize(source_info, num_frames: int = 1) -> str:
    """``file:line:column (function)`` of a source record (``file:line (function)`` without a
    column).

    >>> summarize(SourceInfo("f.py", 3, "g")), summarize(SourceInfo("f.py", 3, "g", "", 4))
    ('f.py:3 (g)', 'f.py:3:4 (g)')
    """
    del num_frames
    if source_info is None:
        return "unknown"
    return str(_ir.SourceInfo(*source_info)._replace(name_stack=""))


def register_exclusion(path: str) -> None:
    """Treat frames of files under ``path`` as library code: an equation staged from them records
    the nearest frame outside instead (JAX hides them from tracebacks).

    >>> import funcgrad.kernel
    >>> register_exclusion("/nonexistent/lib")
    >>> "/nonexistent/lib" in funcgrad.kernel.hooks.library_dirs
    True
    """
    _kernel.register(library_dir=os.fspath(path))


@contextlib.contextmanager
def user_context(c, *, name_stack: NameStack | None = None):
    """Run a block as if at the user's location ``c`` (a traceback, in JAX): with ``name_stack``,
    staged equations record it; funcgrad attaches no traceback to errors, so ``c`` is not used.

    >>> with user_context(None, name_stack=new_name_stack("replayed")):
    ...     str(current_name_stack())
    'replayed'
    """
    del c
    if name_stack is None:
        yield
        return
    with set_name_stack(name_stack):
        yield
