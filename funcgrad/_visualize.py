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
notebook shows the picture once). Tables wider than ``max_width`` are drawn at their natural
width (rich would wrap them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from funcgrad import xla_bridge
from funcgrad._shardings import NamedSharding, PartitionSpec, SingleDeviceSharding, get_mesh
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


def render_sharding(
    shape: Sequence[int], sharding, *, scale: float = 1.0, min_width: int = 9, max_width: int = 80
) -> str:
    """The text ``visualize_sharding`` prints (without colours)."""
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
        left, right, top, bottom = (max(v, 0) for v in (left, right, top, bottom))
        laid[i, j] = (text, top, bottom, left, right)
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
    ``sharding``: JAX's table, in plain text (``use_color`` and ``color_map`` are accepted for
    JAX's signature; the picture has no colours).

    >>> import funcgrad
    >>> from funcgrad.sharding import SingleDeviceSharding
    >>> visualize_sharding((4,), SingleDeviceSharding(funcgrad.devices()[0]))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    del use_color, color_map
    print(render_sharding(shape, sharding, scale=scale, min_width=min_width, max_width=max_width))


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print which devices hold which part of the 1-D or 2-D Array ``arr`` (JAX's
    ``jax.debug.visualize_array_sharding``; keywords as ``visualize_sharding``'s); returns ``None``.

    >>> import funcgrad, numpy as np
    >>> visualize_array_sharding(funcgrad.device_put(np.ones(4), funcgrad.devices()[0]))
    ┌───────┐
    │ CPU 0 │
    └───────┘
    """
    if isinstance(arr, core.Tracer):
        raise TypeError(
            "visualize_array_sharding needs a concrete Array, got a traced value: inside jit use "
            "funcgrad.debug.inspect_array_sharding(x, callback=...)"
        )
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects an Array, got {type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback: Callable) -> None:
    """Call ``callback`` with the sharding of each array of the pytree ``value``: at once for a
    concrete Array; inside ``jit`` while the function is traced (JAX calls it when the program is
    compiled), with the sharding the value's type states on Explicit mesh axes
    (``typeof(x).sharding``). On Auto axes XLA chooses the layout after tracing, so the callback
    receives the mesh in scope with ``P()`` (or the default device's sharding without a mesh).

    >>> import funcgrad, numpy as np
    >>> inspect_array_sharding(funcgrad.device_put(np.ones(2), funcgrad.devices()[0]), callback=print)
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    if not callable(callback):
        raise TypeError(f"inspect_array_sharding: callback must be callable, got {callback!r}")

    def inspect(x):
        if isinstance(x, core.Tracer):
            s = getattr(x.aval, "sharding", None)
            if s is None:
                s = _traced_sharding(x)
            callback(s)
        elif isinstance(x, Array):
            callback(x.sharding)
        else:
            raise TypeError(f"inspect_array_sharding expects arrays, got {type(x).__name__}")

    tu.tree_map(inspect, value)


def _traced_sharding(x):
    """The sharding of a traced value on Auto axes, as far as tracing knows it."""
    mesh = get_mesh()
    if mesh is not None:
        return NamedSharding(mesh, PartitionSpec())
    return SingleDeviceSharding(xla_bridge.devices()[0])
