"""``debug.breakpoint``: a command-line debugger over the user's frames, eager and under ``jit``.

Layer: surface. Imports the kernel (``core``, ``tree_util``) and ``funcgrad._callbacks`` (the debug
callback that carries the frames' array values out of a compiled program).

# NOTE: [breakpoint through a host callback]
# As JAX's ``jax.debug.breakpoint``, the call captures the user's frames where it stands (file,
# line, function, locals and globals; funcgrad's own frames are filtered out unless
# ``filter_frames=False``), and passes the locals that are arrays -- tracers under ``jit``/
# ``vmap``/``grad`` -- through one ``debug.callback``. When the callback runs (at once eagerly,
# when the compiled program reaches it under ``jit``), the debugger is given the frames with those
# locals as concrete values and reads commands from ``sys.stdin`` (so a test scripts it with an
# ``io.StringIO``): ``p``/``pp`` an expression, ``l``/``ll`` the source, ``u``/``d`` move between
# frames, ``w``/``bt`` the stack, ``c`` continue, ``q`` quit (continue without stopping at this
# breakpoint again); any other line is evaluated in the current frame. Prompt and output are
# JAX's ``cli`` debugger's (``(jdb)``).
"""

from __future__ import annotations

import cmd
import dataclasses
import linecache
import pprint
import sys
import traceback

from funcgrad._callbacks import debug_callback
from funcgrad.kernel import core
from funcgrad.kernel.array import Array

__all__ = ["breakpoint"]


@dataclasses.dataclass
class _Frame:
    filename: str
    lineno: int
    function: str
    locals: dict
    globals: dict


def _is_array(x) -> bool:
    return isinstance(x, Array | core.Tracer)


def _user_frames(filter_frames: bool, num_frames: int | None) -> list:
    frames = []
    frame = sys._getframe(2)  # (the caller of ``breakpoint``)
    library = core.library_dir()
    while frame is not None:
        if not (filter_frames and frame.f_code.co_filename.startswith(library)):
            frames.append(frame)
            if num_frames is not None and len(frames) >= num_frames:
                break
        frame = frame.f_back
    return frames


class _Debugger(cmd.Cmd):
    prompt = "(jdb) "

    def __init__(self, frames: list[_Frame], stdin=None, stdout=None, completekey: str = "tab"):
        super().__init__(
            stdin=sys.stdin if stdin is None else stdin,
            stdout=sys.stdout if stdout is None else stdout,
            completekey=completekey,
        )
        self.use_rawinput = False
        self.frames, self.index = frames, 0
        self.quit = False

    @property
    def frame(self) -> _Frame:
        return self.frames[self.index]

    def _eval(self, expr: str):
        return eval(expr, self.frame.globals, self.frame.locals)

    def _error(self):
        exc = sys.exc_info()[1]
        self.stdout.write("".join(traceback.format_exception_only(type(exc), exc)))

    def default(self, line):
        try:
            value = self._eval(line)
        except SyntaxError:
            try:
                exec(line, self.frame.globals, self.frame.locals)
            except Exception:
                self._error()
            return
        except Exception:
            self._error()
            return
        if value is not None:
            self.stdout.write(repr(value) + "\n")

    def emptyline(self):
        return False

    def do_p(self, arg):
        """p expression: print its repr."""
        try:
            self.stdout.write(repr(self._eval(arg)) + "\n")
        except Exception:
            self._error()

    def do_pp(self, arg):
        """pp expression: pretty-print it."""
        try:
            self.stdout.write(pprint.pformat(self._eval(arg)) + "\n")
        except Exception:
            self._error()

    def _source(self, context: int | None):
        f = self.frame
        self.stdout.write(f"> {f.filename}({f.lineno})\n")
        lines = linecache.getlines(f.filename)
        # The enclosing function's source as JAX's debugger reads it (``inspect.getsource``: its
        # decorators, its body, then one empty line; the module's at top level), and of it
        # ``context`` lines before the line above the current one and after the current one.
        lo, hi = max(f.lineno - 1, 0), f.lineno
        while lo > 0 and not lines[lo].lstrip().startswith(("def ", "async def ")):
            lo -= 1
        indent = len(lines[lo]) - len(lines[lo].lstrip()) if lo > 0 else -1  # (the def's)
        while lo > 0 and lines[lo - 1].lstrip().startswith("@"):
            lo -= 1
        while hi < len(lines) and (
            len(lines[hi]) - len(lines[hi].lstrip()) > indent or not lines[hi].strip()
        ):
            hi += 1
        while hi > f.lineno and not lines[hi - 1].strip():
            hi -= 1
        source = [line.rstrip() for line in lines[lo:hi]] + [""]
        offset = f.lineno - 1 - lo
        for i, line in enumerate(source):
            if context is None or offset - 1 - context <= i <= offset + context:
                self.stdout.write(f"{'->  ' if i == offset else '    '}{line}\n")

    def do_l(self, arg):
        """l: the source around the current line."""
        self._source(2)

    do_list = do_l

    def do_ll(self, arg):
        """ll: the whole function of the current frame."""
        self._source(None)

    def do_u(self, arg):
        """u: one frame up (towards the caller)."""
        if self.index + 1 < len(self.frames):
            self.index += 1
        else:
            self.stdout.write("At topmost frame.\n")
        self._source(2)

    do_up = do_u

    def do_d(self, arg):
        """d: one frame down."""
        if self.index > 0:
            self.index -= 1
        else:
            self.stdout.write("At bottommost frame.\n")
        self._source(2)

    do_down = do_d

    def do_w(self, arg):
        """w: the stack, innermost last."""
        self.stdout.write("Traceback:\n")
        for f in reversed(self.frames):
            self.stdout.write(f'  File "{f.filename}", line {f.lineno}\n')
            line = linecache.getline(f.filename, f.lineno).strip()
            if line:
                self.stdout.write(f"    {line}\n")

    do_bt = do_where = do_w

    def do_c(self, arg):
        """c: continue."""
        return True

    do_cont = do_continue = do_c

    def do_q(self, arg):
        """q: continue, and do not stop at this breakpoint again."""
        self.quit = True
        return True

    do_quit = do_exit = do_q

    def do_EOF(self, arg):
        return True


def breakpoint(  # noqa: A001 - JAX's name: funcgrad.debug.breakpoint
    *, backend: str | None = None, filter_frames: bool = True, num_frames: int | None = None,
    ordered: bool = False, token=None, **kwargs,
):  # fmt: skip
    """Stop in a debugger at this line, with the array values of the user's frames -- eagerly,
    and under ``jit``/``vmap``/``grad`` when the program reaches it (NOTE: [breakpoint through a
    host callback]). Commands are read from ``sys.stdin``: ``p expr``, ``pp expr``, ``l``, ``ll``,
    ``u``, ``d``, ``w``, ``c``, ``q``. JAX's signature: ``backend`` (``"cli"`` or ``None``),
    ``filter_frames`` (hide funcgrad's frames), ``num_frames`` (how many to capture), ``ordered``
    (an ordered callback under ``jit``), ``token`` (returned as given); the CLI debugger's
    ``stdin``/``stdout`` (file objects to read commands from and write to) and ``completekey``.

    >>> import io, sys, funcgrad, funcgrad.numpy as fnp
    >>> def f(x):
    ...     y = fnp.sin(x)
    ...     breakpoint()
    ...     return y
    >>> sys.stdin, stdin = io.StringIO("p y\\nc\\n"), sys.stdin
    >>> _ = funcgrad.jit(f)(0.0)
    Entering jdb:
    (jdb) Array(0., dtype=float64)
    (jdb)
    >>> sys.stdin = stdin
    """
    if backend not in (None, "cli"):
        raise ValueError(
            f"debug.breakpoint: backend {backend!r} is not available; funcgrad has the 'cli' one"
        )
    unknown = sorted(set(kwargs) - {"stdin", "stdout", "completekey"})  # (the CLI debugger's, as JAX's)
    if unknown:
        raise TypeError(f"debug.breakpoint: unexpected keyword arguments {unknown}")
    frames = _user_frames(filter_frames, num_frames)
    captured, arrays = [], []
    for fr in frames:
        statics, dynamic_names = {}, []
        for name, value in fr.f_locals.items():
            if _is_array(value):
                dynamic_names.append(name)
                arrays.append(value)
            else:
                statics[name] = value
        captured.append(
            (fr.f_code.co_filename, fr.f_lineno, fr.f_code.co_name, statics, dynamic_names, fr.f_globals)
        )
    site = (frames[0].f_code.co_filename, frames[0].f_lineno) if frames else None

    def stop(*values):
        if site in _quit_sites:
            return
        it = iter(values)
        debugger_frames = []
        for filename, lineno, function, statics, names, globs in captured:
            local = dict(statics)
            local.update((n, next(it)) for n in names)
            debugger_frames.append(_Frame(filename, lineno, function, local, globs))
        debugger = _Debugger(debugger_frames, **kwargs)
        debugger.stdout.write("Entering jdb:\n")
        debugger.cmdloop()
        if debugger.quit:
            _quit_sites.add(site)

    if type(core.current_trace()) is core.EvalTrace and not any(isinstance(a, core.Tracer) for a in arrays):
        stop(*arrays)  # (eagerly: the values themselves, weak types included)
    else:
        debug_callback(stop, *arrays, ordered=ordered)
    return token


_quit_sites: set = set()
