"""``funcgrad.experimental.layout``: JAX's ``Layout`` and ``Format`` records (``jax.experimental.layout``).

Layer: surface. Imports the standard library and the kernel's tree utilities (for device_put's
``Format`` placements).

A ``Layout`` names the order in which an array's dimensions are laid out in memory
(``major_to_minor``); a ``Format`` pairs a layout with a sharding. funcgrad always uses XLA's
default layout (row-major, ``major_to_minor`` descending), so these are records that programs and
libraries (flax's sharding helpers) build, compare and inspect; ``with_layout_constraint`` accepts
the default layout (and ``None``/``Layout.AUTO``, which leave XLA's choice) and refuses any other
with a ``ValueError`` rather than ignoring it.

>>> Format(Layout((1, 0))).layout.major_to_minor
(1, 0)
>>> Layout((1, 0)) == Layout((1, 0)), Format() == Format(None, None)
(True, True)
"""

from __future__ import annotations

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

    def __init__(self, layout=None, sharding=None):
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return isinstance(other, Format) and (self.layout, self.sharding) == (other.layout, other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format(layout={self.layout}, sharding={self.sharding})"


def with_layout_constraint(x, layout):
    """``x``, which funcgrad lays out row-major: accepted when ``layout`` is that (or None/AUTO).

    >>> import numpy as np
    >>> with_layout_constraint(np.ones((2, 3)), Layout((1, 0))).shape
    (2, 3)
    """
    if layout is None or layout is Layout.AUTO:
        return x
    ndim = len(getattr(x, "shape", ()))
    if layout.major_to_minor != tuple(range(ndim - 1, -1, -1)) or layout.tiling:
        raise ValueError(
            f"with_layout_constraint: funcgrad lays arrays out row-major (major_to_minor="
            f"{tuple(range(ndim - 1, -1, -1))}, no tiling); {layout} is not available"
        )
    return x


def _formats_as_shardings(x, device):
    """``device_put``'s target with each ``Format`` in it replaced by its sharding, once its layout
    is found available for the leaves it places (``device_put(x, Format(layout, sharding))``, as
    JAX's): a ``Format`` for all of ``x``, or ``Format`` leaves of a pytree of placements."""
    if isinstance(device, Format):
        tu.tree_map(lambda v: with_layout_constraint(v, device.layout), x)
        return device.sharding

    def sharding_of(s):
        if isinstance(s, Format):
            if s.layout is not None and s.layout is not Layout.AUTO:
                raise ValueError(
                    f"device_put: a Format with a layout ({s.layout}) inside a pytree of placements is "
                    "not available on funcgrad (row-major layouts only): pass Format(None, sharding)"
                )
            return s.sharding
        return s

    return tu.tree_map(sharding_of, device, is_leaf=lambda s: isinstance(s, Format))
