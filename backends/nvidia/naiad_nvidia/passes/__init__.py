"""NVIDIA GPU-IR passes: tensor-core placement, operand staging and K-loop pipelining."""
