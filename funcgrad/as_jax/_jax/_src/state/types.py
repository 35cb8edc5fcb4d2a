"""``jax._src.state.types`` under the alias: ``AbstractRef``, the abstract value of a mutable array
reference. funcgrad has no mutable array references, so no value or aval is an instance of it;
libraries that test ``isinstance(x, AbstractRef)`` get ``False``, which is right.
"""


class AbstractRef:
    """The type of a mutable reference's abstract value (funcgrad makes none)."""
