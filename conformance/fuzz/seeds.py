"""Seed ranges and per-peer generator limits shared by the pytest tier and the command line."""
from __future__ import annotations


def parse_seeds(text: str) -> range:
    """``"A:B"`` -> seeds A..B-1; ``"N"`` -> just N."""
    text = str(text).strip()
    if ":" in text:
        a, b = text.split(":", 1)
        lo, hi = int(a), int(b)
        if hi <= lo:
            raise ValueError(f"--seeds {text}: the range is empty (write A:B with B > A)")
        return range(lo, hi)
    return range(int(text), int(text) + 1)


def generator_limits(peer: str) -> dict:
    """The SIMT simulator runs one CPU thread per lane: keep its kernels small."""
    if peer.split(":", 1)[0] == "simt":
        return {"max_elements": 256, "max_stmts": 8}
    return {}
