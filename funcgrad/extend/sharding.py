"""``funcgrad.extend.sharding``: JAX's ``jax.extend.sharding`` -- XLA's sharding protos as bytes.

Layer: surface. Imports ``funcgrad.xla_bridge`` (jaxlib's ``xla_client``, whose ``OpSharding`` and
``HloSharding`` these convert). Libraries that store a sharding outside a program (a checkpoint, a
custom partitioning rule) serialize it to XLA's ``OpSharding`` proto and read it back:

>>> xc = xla_client
>>> hlo = xc.HloSharding.from_proto(xc.OpSharding())  # (an empty proto: replicated)
>>> data = get_serialized_proto_from_hlo_sharding(hlo)
>>> get_hlo_sharding_from_serialized_proto(data) == hlo, hlo.is_replicated()
(True, True)

funcgrad has no ``GSPMDSharding`` class (JAX's sharding by an ``HloSharding`` and devices): a
layout known only as an ``HloSharding`` is what funcgrad's compiled programs report as their
output shardings, and ``NamedSharding`` is the public way to build one.
"""

from __future__ import annotations

from funcgrad.xla_bridge.backends import xc as xla_client

__all__ = [
    "get_hlo_sharding_from_serialized_proto",
    "get_op_sharding_from_serialized_proto",
    "get_serialized_proto_from_hlo_sharding",
]


def get_op_sharding_from_serialized_proto(sharding: bytes):
    """The ``xla_client.OpSharding`` proto that the bytes ``sharding`` serialize.

    >>> get_op_sharding_from_serialized_proto(xla_client.OpSharding().SerializeToString()).type
    OpSharding_Type.REPLICATED
    """
    proto = xla_client.OpSharding()
    proto.ParseFromString(sharding)
    return proto


def get_hlo_sharding_from_serialized_proto(sharding: bytes):
    """The ``xla_client.HloSharding`` of a serialized ``OpSharding`` proto.

    >>> get_hlo_sharding_from_serialized_proto(b"").is_replicated()
    True
    """
    return xla_client.HloSharding.from_proto(get_op_sharding_from_serialized_proto(sharding))


def get_serialized_proto_from_hlo_sharding(sharding) -> bytes:
    """The ``OpSharding`` proto of the ``xla_client.HloSharding`` ``sharding``, serialized.

    >>> type(get_serialized_proto_from_hlo_sharding(xla_client.HloSharding.replicate()))
    <class 'bytes'>
    """
    return sharding.to_proto().SerializeToString()
