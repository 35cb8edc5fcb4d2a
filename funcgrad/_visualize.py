"""JAX's sharding helpers of ``jax.debug``: ``visualize_array_sharding``, ``visualize_sharding`` and
``inspect_array_sharding``.

Layer: surface. Imports the kernel (``core``, ``tree_util``, the ``Array`` type),
``funcgrad._shardings`` and ``xla_bridge`` (the default device); shardings are read duck-typed
(``devices_indices_map``, ``device_set``).

The picture is JAX's: JAX draws it with ``rich`` (a table with square box lines, when the output
is not a colour terminal); here the same table is written as plain text with the same sizes --
JAX's cell width (``int(width fraction * base width * 2.5)`` clamped to ``[min_width,
max_width]``, base width ``10 * scale * columns / rows`` of the shape), height (``int(height
fraction * 10 * scale)``) and centred labels (``CPU 0,1``). Both print and return ``None`` (a
notebook shows the picture once). A table wider than ``max_width`` is drawn by rich, as JAX's,
which narrows its columns to fit (without rich: at its natural width).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence

import numpy as np

from funcgrad import xla_bridge
from funcgrad._shardings import (
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    SingleDeviceSharding,
    concrete_mesh,
    get_mesh,
)
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array

__all__ = ["inspect_array_sharding", "visualize_array_sharding", "visualize_sharding"]


def _bounds(slc, size) -> tuple[int, int]:
    if isinstance(slc, int):
        return slc, slc + 1
    start = 0 if slc.start is None else slc.start
    stop = size if slc.stop is None else slc.stop
    return start, stop


def _cell(text: str, width: int, top: int, bottom: int, left: int, right: int) -> list[str]:
    inner = width - left - right
    pad = max(inner - len(text), 0)
    line = " " * left + " " * (pad // 2) + text + " " * (pad - pad // 2) + " " * right
    blank = " " * width
    return [blank] * top + [line] + [blank] * bottom


def _layout(shape, sharding, scale: float, min_width: int, max_width: int):
    """The table's rows and columns and each cell's ``(text, top, bottom, left, right)``."""
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError(
            f"`visualize_sharding` only works for shapes with 1 and 2 dimensions, got shape {shape}"
        )
    base_height = int(10 * scale)
    aspect = (shape[1] if len(shape) == 2 else 1) / shape[0]
    base_width = int(base_height * aspect)
    kind = next(iter(sharding.device_set)).platform.upper()
    cells: dict = {}
    for dev, index in sharding.devices_indices_map(shape).items():
        index = tuple(index) if isinstance(index, tuple) else (index,)
        bounds = [_bounds(s, n) for s, n in zip(index, shape)]
        chunk = tuple(0 if (a, b) == (0, n) else a // (b - a) for (a, b), n in zip(bounds, shape))
        if len(shape) == 2:
            h = (bounds[0][1] - bounds[0][0]) / shape[0]
            w = (bounds[1][1] - bounds[1][0]) / shape[1]
        else:
            chunk = (0, *chunk)
            h = None
            w = (bounds[0][1] - bounds[0][0]) / shape[0]
        entry = cells.setdefault(chunk, [set(), h, w])
        entry[0].add(dev.id)
    rows = max(k[0] for k in cells) + 1
    cols = max(k[1] for k in cells) + 1
    laid: dict = {}
    for (i, j), (ids, h, w) in cells.items():
        text = f"{kind} " + ",".join(str(d) for d in sorted(ids))
        width = min(max(int(w * base_width * 2.5), min_width), max_width)
        height = 1 if h is None else int(h * base_height)
        left, rem = divmod(width - len(text) - 2, 2)
        right = left + rem
        top, rem = divmod(height - 2, 2)
        bottom = top + rem
        laid[i, j] = (text, top, bottom, left, right)
    return rows, cols, laid


def render_sharding(
    shape: Sequence[int], sharding, *, scale: float = 1.0, min_width: int = 9, max_width: int = 80
) -> str:
    """The text ``visualize_sharding`` prints (without colours)."""
    rows, cols, laid = _layout(shape, sharding, scale, min_width, max_width)
    laid = {k: (t, *(max(v, 0) for v in pads)) for k, (t, *pads) in laid.items()}
    col_w = [
        max(len(laid[i, j][0]) + laid[i, j][3] + laid[i, j][4] for i in range(rows)) for j in range(cols)
    ]
    out = ["┌" + "┬".join("─" * w for w in col_w) + "┐"]
    for i in range(rows):
        blocks = []
        for j in range(cols):
            text, top, bottom, left, right = laid[i, j]
            blocks.append(_cell(text, col_w[j], top, bottom, left, right))
        height = max(len(b) for b in blocks)
        blocks = [b + [" " * col_w[j]] * (height - len(b)) for j, b in enumerate(blocks)]
        out.extend("│" + "│".join(b[k] for b in blocks) + "│" for k in range(height))
        out.append(("├" + "┼".join("─" * w for w in col_w) + "┤") if i < rows - 1 else "")
    out[-1] = "└" + "┴".join("─" * w for w in col_w) + "┘"
    return "\n".join(out)


def visualize_sharding(
    shape: Sequence[int],
    sharding,
    *,
    use_color: bool = True,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map=None,
) -> None:
    """Print which devices hold which part of an array of ``shape`` (1-D or 2-D) laid out as
    ``sharding``: JAX's table -- in plain text, or, where ``rich`` is installed and the output
    shows colours (a colour terminal, a notebook) and ``use_color``, in JAX's colours
    (``color_map``, default matplotlib's ``tab20b``).

    >>> import funcgrad
    >>> from funcgrad.sharding import SingleDeviceSharding
    >>> visualize_sharding((4,), SingleDeviceSharding(funcgrad.devices()[0]))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    console = _colour_console(max_width) if use_color else None
    if console is not None and (color_map is not None or _default_colours() is not None):
        _print_in_colour(
            console, shape, sharding, scale, min_width, max_width, color_map or _default_colours()
        )
        return
    if (
        importlib.util.find_spec("rich") is not None
        and _natural_width(shape, sharding, scale, min_width, max_width) > max_width
    ):
        _print_shrunk(shape, sharding, scale, min_width, max_width)
        return
    print(render_sharding(shape, sharding, scale=scale, min_width=min_width, max_width=max_width))


def _natural_width(shape, sharding, scale, min_width, max_width) -> int:
    rows, cols, laid = _layout(shape, sharding, scale, min_width, max_width)
    cells = {k: (t, *(max(v, 0) for v in pads)) for k, (t, *pads) in laid.items()}
    widths = [
        max(len(cells[i, j][0]) + cells[i, j][3] + cells[i, j][4] for i in range(rows)) for j in range(cols)
    ]
    return sum(widths) + cols + 1


def _print_shrunk(shape, sharding, scale, min_width, max_width) -> None:
    """A table wider than ``max_width``, as JAX prints it: rich's table in a console of that width,
    which narrows the columns (the labels may then not fit: JAX shows empty cells)."""
    import rich.align  # noqa: PLC0415 - import-time cost: an optional dependency, loaded on first use
    import rich.box  # noqa: PLC0415 - import-time cost: as above
    import rich.console  # noqa: PLC0415 - import-time cost: as above
    import rich.padding  # noqa: PLC0415 - import-time cost: as above
    import rich.table  # noqa: PLC0415 - import-time cost: as above

    rows, cols, laid = _layout(shape, sharding, scale, min_width, max_width)
    table = rich.table.Table(
        show_header=False, show_lines=True, padding=0, highlight=True, pad_edge=False, box=rich.box.SQUARE
    )
    for i in range(rows):
        row = []
        for j in range(cols):
            text, top, bottom, left, right = laid[i, j]
            pads = tuple(max(v, 0) for v in (top, right, bottom, left))
            row.append(rich.padding.Padding(rich.align.Align(text, "center", vertical="middle"), pads))
        table.add_row(*row)
    rich.console.Console(width=max_width).print(table, end="\n\n")


def _colour_console(width: int):
    """A ``rich`` console when ``rich`` is installed and the output shows colours (a colour
    terminal, a notebook), else ``None``: then the table is the plain text above, as JAX's is."""
    if importlib.util.find_spec("rich") is None:
        return None
    import rich.console  # noqa: PLC0415 - import-time cost: an optional dependency, loaded on first use

    console = rich.console.Console(width=width)
    return console if console.color_system is not None else None


def _default_colours():
    """JAX's colour map (matplotlib's ``tab20b``), or ``None`` without matplotlib."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib  # noqa: PLC0415 - import-time cost: an optional dependency, loaded on first use

    return matplotlib.colormaps["tab20b"]


def _print_in_colour(console, shape, sharding, scale, min_width, max_width, colour_map) -> None:
    """The table as JAX prints it in colour: each cell's devices on a coloured block one
    character larger on each side, the colours taken from ``colour_map`` in JAX's order."""
    import rich.align  # noqa: PLC0415 - import-time cost: an optional dependency, loaded on first use
    import rich.padding  # noqa: PLC0415 - import-time cost: as above
    import rich.style  # noqa: PLC0415 - import-time cost: as above
    import rich.table  # noqa: PLC0415 - import-time cost: as above

    rows, cols, laid = _layout(shape, sharding, scale, min_width, max_width)
    n = rows * cols
    values = np.linspace(0, 1, n)
    order, k = [], 0
    for _ in range(n):  # JAX's walk through the colour map: neighbours get distant colours
        order.append(values[k])
        k = (k + n // 2 + (n % 2 == 0)) % n
    table = rich.table.Table(
        show_header=False, show_lines=False, padding=0, highlight=False, pad_edge=False, box=None
    )
    colours = iter(order)
    for i in range(rows):
        row = []
        for j in range(cols):
            text, top, bottom, left, right = laid[i, j]
            r, g, b = (int(c * 255) for c in colour_map(next(colours))[:3])
            bright = r * 0.299 + g * 0.587 + b * 0.114 > 186
            style = rich.style.Style(
                bgcolor=f"#{r:02X}{g:02X}{b:02X}", color="#000000" if bright else "#ffffff"
            )
            pads = tuple(max(v + 1, 0) for v in (top, right, bottom, left))
            row.append(
                rich.padding.Padding(rich.align.Align(text, "center", vertical="middle"), pads, style=style)
            )
        table.add_row(*row)
    console.print(table, end="\n\n")


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print which devices hold which part of the 1-D or 2-D Array ``arr`` (JAX's
    ``jax.debug.visualize_array_sharding``; keywords as ``visualize_sharding``'s); returns ``None``.
    Inside ``jit`` (or ``shard_map``) it prints the sharding ``inspect_array_sharding`` reports.

    >>> import funcgrad, numpy as np
    >>> visualize_array_sharding(funcgrad.device_put(np.ones(4), funcgrad.devices()[0]))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    if isinstance(arr, core.Tracer):  # (as JAX: printed when the sharding is known, through inspect)
        shape = arr.shape
        inspect_array_sharding(arr, callback=lambda s: visualize_sharding(shape, s, **kwargs))
        return
    if not isinstance(arr, Array) and hasattr(arr, "shape"):
        # A pytree standing for the one array it holds (flax's nnx.Param), shown as JAX shows it.
        leaves = tu.tree_leaves(arr)
        if len(leaves) == 1 and isinstance(leaves[0], Array):
            arr = leaves[0]
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects an Array, got {type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback: Callable) -> None:
    """Call ``callback`` with the sharding of each array of the pytree ``value``: at once for a
    concrete Array; inside ``jit`` while the function is traced (JAX calls it when the program is
    compiled), with the sharding the value's type states on Explicit mesh axes
    (``typeof(x).sharding``, over the concrete mesh as the compiled program reports it). On Auto
    axes XLA chooses the layout after tracing, so the callback receives the mesh in scope with
    ``P()`` (or the default device's sharding without a mesh).

    >>> import funcgrad, numpy as np
    >>> inspect_array_sharding(funcgrad.device_put(np.ones(2), funcgrad.devices()[0]), callback=print)
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    if not callable(callback):
        raise TypeError(f"inspect_array_sharding: callback must be callable, got {callback!r}")

    def inspect(x):
        if isinstance(x, core.Tracer):
            s = getattr(x.aval, "_sharding", None)
            callback(_traced_sharding(x) if s is None else _compiled_form(s))
        elif isinstance(x, Array):
            callback(x.sharding)
        else:
            raise TypeError(f"inspect_array_sharding expects arrays, got {type(x).__name__}")

    tu.tree_map(inspect, value)


def _compiled_form(s):
    """A type's sharding as JAX's callback sees it: the compiled program's, over the concrete mesh
    in scope (its axes of type Auto, as a compiled sharding's mesh reports them), where there is one."""
    mesh = concrete_mesh(s.mesh, "inspect_array_sharding")
    if mesh is None or mesh.abstract_mesh.axis_names != s.mesh.axis_names:
        return s
    auto = Mesh(mesh.devices, mesh.axis_names, (AxisType.Auto,) * len(mesh.axis_names))
    return NamedSharding(auto, s.spec)


def _traced_sharding(x):
    """The sharding of a traced value on Auto axes, as far as tracing knows it."""
    mesh = get_mesh()
    if mesh is not None:
        return NamedSharding(mesh, PartitionSpec())
    return SingleDeviceSharding(xla_bridge.devices()[0])
