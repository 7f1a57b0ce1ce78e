"""Host-side helpers shared by kernels' launch code and the language (``naiad.cdiv``...)."""
from __future__ import annotations


def cdiv(x: int, y: int) -> int:
    """Ceiling division of integers: the number of ``y``-sized blocks covering ``x``."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= ``n`` (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
