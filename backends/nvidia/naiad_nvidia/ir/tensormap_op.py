"""GPU-IR op of a tensor map built in the kernel (placed by
:mod:`naiad_nvidia.passes.device_tensor_maps`, lowered by
:mod:`naiad_nvidia.lowering.device_tensor_map`).

* ``nvidia.tensormap_make(scratch, base, shape..., strides...) -> map {slot, program_bytes,
  elemtype, rank, box_dims, element_strides, swizzle, fill, elem_bytes}``: thread 0 of the
  program writes the 128-byte ``CUtensorMap`` of a descriptor at byte ``slot * 128`` of the
  program's part of the global scratch buffer (``scratch + program * program_bytes``, the
  launch's allocation from ``naiad.set_allocator``): it first waits for its earlier bulk
  stores (``cp.async.bulk.wait_group 0``: one may still read the map this op rewrites), zeroes
  the 128 bytes, sets every field with ``tensormap.replace`` (base, global dims and byte
  strides from the operands; the rest from the attributes, see
  :class:`naiad_nvidia.runtime.tensor_map.DeviceMapFields`) and fences the map for the
  tensor-map proxy (release, then acquire of those 128 bytes). The result is the map's
  global address; only thread 0 issues the TMA copies and stores that read it.
"""
from __future__ import annotations

from naiad.backend import OpDef, register_op

TENSORMAP_MAKE_OP = "nvidia.tensormap_make"

register_op(OpDef(TENSORMAP_MAKE_OP, (2, None), 1, 0,
                  ("slot", "program_bytes", "elemtype", "rank", "box_dims", "element_strides",
                   "swizzle", "fill", "elem_bytes"), frozenset(),
                  "write a tensor map into the program's global scratch: "
                  "(scratch ptr, base ptr, shape i32..., strides i64...) -> map ptr"))
