"""naiad's plugin system: hook specifications, the plugin manager and the core/backend contract."""
from .hookspecs import hookimpl, hookspec, PROJECT
from .contract import BinaryResult, Codegen, Launcher, Target, TargetInfo, TargetSpec
