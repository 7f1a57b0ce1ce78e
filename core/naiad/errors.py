"""Every error naiad raises on purpose derives from :class:`NaiadError`."""
from __future__ import annotations


class NaiadError(Exception):
    """Base class of naiad's errors."""


class CompilationError(NaiadError):
    """A mistake in a kernel's source. The message names file, line and column, quotes the line
    with a caret under the offending column, and says what is wrong."""

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, source_line: str | None = None):
        self.raw_message = message
        self.filename, self.lineno, self.col, self.source_line = filename, lineno, col, source_line
        super().__init__(self._format())

    def _format(self) -> str:
        if self.lineno is None:
            return self.raw_message
        where = f"{self.filename}:{self.lineno}:{(self.col or 0) + 1}"
        text = f"{where}: {self.raw_message}"
        if self.source_line is not None:
            line = self.source_line.rstrip("\n")
            stripped = line.lstrip()
            indent = len(line) - len(stripped)
            caret = " " * max((self.col or 0) - indent, 0) + "^"
            text += f"\n    {stripped}\n    {caret}"
        return text


class IRError(NaiadError):
    """Malformed IR: a verifier failure or a parse error of the textual form."""


class OptionError(NaiadError):
    """An invalid compile/launch option (wrong name, type or value)."""


class TargetError(NaiadError):
    """An unknown or unusable target."""


class CodegenError(NaiadError):
    """A backend's toolchain failed (LLVM, assembler, linker); the message carries its log."""


class DeviceError(NaiadError):
    """No driver/runtime/device, or a launch failed."""


class PluginError(NaiadError):
    """A plugin failed to load or a hook raised; names the plugin."""


class OutOfBoundsError(NaiadError):
    """The reference executor caught an access outside every argument buffer."""


class StaleKernelError(NaiadError, RuntimeError):
    """A global (or closure) value a compiled kernel folded in was rebound after it was compiled;
    launching would run code built from the old value."""


class DeviceAssertionError(DeviceError, AssertionError):
    """A ``tl.device_assert`` (or run-time ``assert``) failed during a launch in debug mode;
    the message names the kernel line, the program and the element index."""
