"""Triton's runtime error names, mapped to the naiad errors raised for the same situations
(``triton.runtime.errors`` resolves here under ``naiad run``)."""
from __future__ import annotations

from ..errors import CodegenError, CompilationError, DeviceError, NaiadError

#: Triton's interpreter reports kernel mistakes while running; naiad reports them when compiling.
InterpreterError = CompilationError


class OutOfResources(DeviceError):
    """A kernel needs more shared memory, registers or threads than the device has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, Required: {required}, Hardware limit: "
                         f"{limit}. Reducing block sizes or `num_stages` may help.")


PTXASError = CodegenError

__all__ = ["InterpreterError", "OutOfResources", "PTXASError", "NaiadError"]
