"""naiad's plugin system: hook specifications, the plugin manager and the core/backend contract.

Plugin authors need :data:`hookimpl` and the contract classes; tests and notebooks use
:func:`register` / :func:`unregister` to add a plugin without an entry point.
"""
from .hookspecs import hookimpl, hookspec, PROJECT
from .contract import (BinaryResult, Codegen, KernelDescription, Launcher, LLVMAttributes, Options,
                       ResourceReport, Target, TargetInfo, TargetSpec)


def get_plugin_manager():
    """The process-wide :class:`naiad.plugins.manager.NaiadPluginManager` (built on first use)."""
    from .manager import get_plugin_manager as _get

    return _get()


def register(plugin, name=None):
    """Register ``plugin`` (module or object with ``@naiad.hookimpl`` methods); returns its name."""
    from .manager import register as _register

    return _register(plugin, name)


def unregister(plugin=None, name=None):
    """Unregister a plugin by object or name."""
    from .manager import unregister as _unregister

    return _unregister(plugin, name)
