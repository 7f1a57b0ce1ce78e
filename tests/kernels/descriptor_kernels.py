"""Kernels using tensor descriptors (shared by the reference and SIMT tests)."""
import naiad
import naiad.language as tl


@naiad.jit
def shifted_copy(In, Out, M, N, dm, dn, BM: tl.constexpr, BN: tl.constexpr):
    """Out[block] = 2 * In[block shifted by (dm, dn)]: loads cross every edge (zero fill), the
    store's blocks overhang the output (dropped)."""
    src = tl.make_tensor_descriptor(In, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(Out, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    v = src.load([pm * BM + dm, pn * BN + dn])
    dst.store([pm * BM, pn * BN], v * 2)


@naiad.jit
def add_into(Acc, Val, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Acc += Val through desc.atomic_add, from overlapping overhanging blocks."""
    acc = tl.make_tensor_descriptor(Acc, [M, N], [N, 1], [BM, BN])
    val = tl.make_tensor_descriptor(Val, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    acc.atomic_add([pm * BM, pn * BN], val.load([pm * BM, pn * BN]))


@naiad.jit
def bad_block(ptr):
    desc = tl.make_tensor_descriptor(ptr, [128, 128], [128, 1], [1, 2])
    desc.load([0, 0])


@naiad.jit
def bad_store_shape(ptr):
    desc = tl.make_tensor_descriptor(ptr, [128, 128], [128, 1], [8, 8])
    desc.store([0, 0], tl.zeros([8, 4], dtype=tl.int32))


@naiad.jit
def copy_through_host_descriptors(x_desc, y_desc, SCALE: tl.constexpr):
    """Host TensorDescriptor arguments: y[block] = SCALE * x[block], blocks overhanging."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    BM: tl.constexpr = x_desc.block_shape[0]
    BN: tl.constexpr = x_desc.block_shape[1]
    y_desc.store([pm * BM, pn * BN], x_desc.load([pm * BM, pn * BN]) * SCALE)
