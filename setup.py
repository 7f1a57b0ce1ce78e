"""Package list for setuptools (metadata lives in pyproject.toml).

The packages sit in several source folders (core/, backends/*/, conformance/), which a static
``packages.find`` cannot map to the distribution's import names, so they are listed here.
"""
from setuptools import find_packages, setup

ROOTS = {"core": "", "backends/reference": "", "backends/nvidia": "", "backends/amd": ""}
packages = []
for root in ROOTS:
    packages += find_packages(root)
packages += ["naiad_conformance", "naiad_conformance.fuzz"]

setup(packages=packages)
