"""JAX's ``Layout`` and ``Format`` records, public as ``funcgrad.experimental.layout``
(``jax.experimental.layout``).

Layer: surface. Imports the standard library and the kernel's tree utilities (for device_put's
``Format`` placements): below ``funcgrad._array_placement``, which installs ``Array.format`` from
here (``funcgrad.experimental``'s package imports too much to sit under it).

A ``Layout`` names the order in which an array's dimensions are laid out in memory
(``major_to_minor``); a ``Format`` pairs a layout with a sharding (JAX's ``jit`` and
``device_put`` take one where they take a sharding). funcgrad keeps every array in XLA's default
layout (row-major: ``major_to_minor`` ``(0, 1, ...)``), which is also what XLA's CPU compiler
picks for ``Layout.AUTO``: ``jit(in_shardings=Format(Layout.AUTO), ...)`` is accepted, and the
layouts a compiled program takes and gives are read back from XLA (``.compile().input_formats``,
``output_formats``), as an array's is (``x.format``). A concrete layout other than the default
(``device_put(x, Format(Layout((1, 0)), s))``, a jit's ``in_shardings``/``out_shardings``) is
refused with a ``ValueError`` rather than ignored: an array in another layout would reach
programs compiled for the default one. ``with_layout_constraint`` -- a hint for an intermediate
value, which changes no number -- takes any permutation.

>>> Format(Layout.AUTO)
Format(layout=AUTO, sharding=None)
>>> Layout((1, 0)) == Layout((1, 0)), Format() == Format(None, None)
(True, True)
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu

__all__ = ["Format", "Layout", "with_layout_constraint"]


class _Auto:
    def __repr__(self):
        return "AUTO"


class Layout:
    """The memory order of an array's dimensions: ``major_to_minor`` (a permutation), ``tiling``."""

    AUTO = _Auto()  # let the compiler choose (what funcgrad always does)

    def __init__(self, major_to_minor, tiling=None, sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = None if tiling is None else tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    @staticmethod
    def from_pjrt_layout(pjrt_layout) -> Layout:
        """The ``Layout`` of a PJRT layout (a buffer's or an executable's, jaxlib's ``PjRtLayout``).

        >>> import funcgrad
        >>> x = funcgrad.jit(lambda v: v * 2)(funcgrad.numpy.ones((2, 3)))
        >>> Layout.from_pjrt_layout(x._buffer._pjrt_layout)
        Layout(major_to_minor=(0, 1), tiling=(), sub_byte_element_size_in_bits=0)
        """
        xla = pjrt_layout._xla_layout()
        return Layout(xla.minor_to_major()[::-1], xla.tiling(), xla.element_size_in_bits())

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (
            f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
            f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})"
        )

    def update(self, **kwargs) -> Layout:
        """A copy with the given fields replaced."""
        fields = dict(
            major_to_minor=self.major_to_minor,
            tiling=self.tiling,
            sub_byte_element_size_in_bits=self.sub_byte_element_size_in_bits,
        )
        return Layout(**{**fields, **kwargs})


class Format:
    """A layout and a sharding, as ``jax.experimental.layout.Format``."""

    __slots__ = ("layout", "sharding")

    def __init__(self, layout=None, sharding=None):
        # (JAX's checks and words)
        if isinstance(layout, Layout) and sharding is None:
            raise ValueError(
                f"Sharding has to be concrete when layout is of type {type(layout)}. Please pass a "
                "`jax.sharding.NamedSharding` or `jax.sharding.SingleDeviceSharding` to the sharding "
                f"argument. Got sharding {sharding}"
            )
        if not isinstance(layout, Layout | _Auto | None):
            raise TypeError(
                "Invalid value received for the layout argument. Expected values are `None`, "
                f"`Layout.AUTO` or an instance of `Layout`. Got {layout} of type {type(layout)}"
            )
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"


def with_layout_constraint(x, layout):
    """``x``, its value unchanged: a layout for an intermediate value is a hint to XLA that
    changes no number (JAX's ``LayoutConstraint``; funcgrad leaves XLA its choice), checked as
    JAX checks it -- a permutation of ``x``'s dimensions, or None/AUTO.

    >>> import numpy as np
    >>> with_layout_constraint(np.ones((2, 3)), Layout((0, 1))).shape
    (2, 3)
    """
    if layout is None or layout is Layout.AUTO:
        return x
    ndim = len(getattr(x, "shape", ()))
    if len(layout.major_to_minor) != ndim:
        raise ValueError(
            "Length of major_to_minor and the rank of the value should match. Got "
            f"major_to_minor={layout.major_to_minor} and shape={tuple(getattr(x, 'shape', ()))}"
        )
    if sorted(layout.major_to_minor) != list(range(ndim)):
        raise ValueError(f"with_layout_constraint: {layout} is not a permutation of the dimensions")
    return x


def default_layout(ndim: int) -> Layout:
    """XLA's default (row-major) layout of an array of ``ndim`` dimensions, as read back.

    >>> default_layout(2)
    Layout(major_to_minor=(0, 1), tiling=(), sub_byte_element_size_in_bits=0)
    """
    return Layout(tuple(range(ndim)), ())


def _formats_as_shardings(x, device):
    """``device_put``'s target with each ``Format`` in it replaced by its sharding, once its layout
    is found to be XLA's default for the leaves it places (``device_put(x, Format(layout,
    sharding))``, as JAX's): a ``Format`` for all of ``x``, or ``Format`` leaves of a pytree of
    placements. funcgrad keeps every array in XLA's default layout (its compiled programs and
    their fast path assume it), so another layout is refused rather than ignored."""
    if isinstance(device, Format):
        layout = device.layout
        if layout is not None or device.sharding is not None:
            if device.sharding is None or not isinstance(layout, Layout | None):
                # (JAX's words: a Format to place by is concrete, AUTO is a compiler's choice)
                shown = ", ".join(core.get_aval(v).str_short(short_dtypes=False) for v in tu.tree_leaves(x))
                raise ValueError(
                    f"sharding and layout in `Layout` instance should be concrete. Got layout: {device} "
                    f"for input {shown}"
                )
        tu.tree_map(lambda v: check_default_layout(layout, np.shape(v), "device_put"), x)
        return device.sharding

    def sharding_of(s):
        if isinstance(s, Format):
            if s.layout is not None and s.layout is not Layout.AUTO:
                raise ValueError(
                    f"device_put: a Format with a layout ({s.layout}) inside a pytree of placements is "
                    "not available on funcgrad (XLA's default layouts only): pass Format(None, sharding)"
                )
            return s.sharding
        return s

    return tu.tree_map(sharding_of, device, is_leaf=lambda s: isinstance(s, Format))


def check_default_layout(layout, shape, where: str) -> None:
    """Refuse (``ValueError``) a concrete ``layout`` other than XLA's default for a value of
    ``shape``: funcgrad's arrays and programs use the default layout only.

    >>> check_default_layout(Layout((0, 1)), (2, 3), "jit")
    >>> check_default_layout(Layout((1, 0)), (2, 3), "jit")
    Traceback (most recent call last):
    ...
    ValueError: jit: funcgrad keeps arrays in XLA's default layout (major_to_minor=(0, 1)); ...
    """
    if layout is None or layout is Layout.AUTO:
        return
    ndim = len(shape)
    if len(layout.major_to_minor) != ndim:  # (JAX's words)
        raise ValueError(
            "Length of major_to_minor and the rank of the value should match. Got "
            f"major_to_minor={layout.major_to_minor} and shape={tuple(shape)}"
        )
    if layout.major_to_minor != tuple(range(ndim)) or layout.tiling or layout.sub_byte_element_size_in_bits:
        raise ValueError(
            f"{where}: funcgrad keeps arrays in XLA's default layout (major_to_minor="
            f"{tuple(range(ndim))}); {layout} is not available"
        )


def format_of(x) -> Format:
    """``x.format``: the layout of its buffer (XLA's default for a value on the host) and its
    sharding, as JAX's ``Array.format``."""
    b = x._buffer
    pjrt = getattr(b, "_pjrt_layout", None) if b is not None else None
    layout = Layout.from_pjrt_layout(pjrt) if pjrt is not None else default_layout(x.ndim)
    return Format(layout, x.sharding)
