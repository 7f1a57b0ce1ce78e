"""Values with tensors nested in tuples/lists (or tensor descriptors), as they cross a @jit call
(arguments and return values): flattened to the list of tensors the ``call`` op carries plus a
hashable template that rebuilds the structure (compile-time items stay in the template). A
descriptor crosses as its base pointer, shape and strides, so a @jit helper that builds one
(``_maybe_make_tensor_desc`` in Triton's tutorials) returns it to its caller."""
from __future__ import annotations

from ..language.core import constexpr, tensor
from ..language.descriptor import tensor_descriptor
from .context import constant_key


def has_tensor(value) -> bool:
    if isinstance(value, (tensor, tensor_descriptor)):
        return True
    if isinstance(value, (tuple, list)):
        return any(has_tensor(v) for v in value)
    return False


def flatten(value, out: list) -> tuple:
    """Template of ``value``; its tensors are appended to ``out`` in order."""
    if isinstance(value, tensor):
        out.append(value)
        return ("tensor", len(out) - 1)
    if isinstance(value, tensor_descriptor):
        tmap = None if value.tensor_map is None else flatten(value.tensor_map, out)
        return ("descriptor", (flatten(value.base, out), flatten(list(value.shape), out),
                               flatten(list(value.strides), out), tuple(value.block_shape),
                               value.padding, tmap, value.portable_reason,
                               None if value.block_gcd is None else tuple(value.block_gcd)))
    if isinstance(value, (tuple, list)) and has_tensor(value):
        kind = "list" if isinstance(value, list) else "tuple"
        return (kind, tuple(flatten(v, out) for v in value))
    return ("const", value.value if isinstance(value, constexpr) else value)


def rebuild(template: tuple, items: list):
    """The value ``template`` describes, its tensors taken from ``items``."""
    kind, payload = template
    if kind == "tensor":
        return items[payload]
    if kind == "descriptor":
        base, shape, strides, block, padding, tmap, reason, block_gcd = payload
        return tensor_descriptor(rebuild(base, items), list(rebuild(shape, items)),
                                 list(rebuild(strides, items)), block, padding,
                                 None if tmap is None else rebuild(tmap, items), reason,
                                 block_gcd)
    if kind in ("tuple", "list"):
        parts = [rebuild(t, items) for t in payload]
        return parts if kind == "list" else tuple(parts)
    return payload


def template_key(template: tuple):
    """A hashable key of a template (constants keyed by type and value)."""
    kind, payload = template
    if kind == "tensor":
        return template
    if kind == "descriptor":
        base, shape, strides, block, padding, tmap, reason, block_gcd = payload
        return (kind, (template_key(base), template_key(shape), template_key(strides), block,
                       padding, None if tmap is None else template_key(tmap), reason,
                       block_gcd))
    if kind in ("tuple", "list"):
        return (kind, tuple(template_key(t) for t in payload))
    return ("const", constant_key(payload))
