"""Which folders install as which packages (everything else is in pyproject.toml).

The repository keeps the layers in the top-level folders ``funcgrad/``, ``primitives/`` and
``xla_bridge/`` (the project's fixed layout), but a wheel installs one top-level name, ``funcgrad``:
``primitives/`` becomes ``funcgrad.primitives`` and ``xla_bridge/`` becomes ``funcgrad.xla_bridge``.
The package list is found, not kept by hand, so a new subpackage installs without an edit here.
"""

from setuptools import find_packages, setup

MAPPED = {"primitives": "funcgrad.primitives", "xla_bridge": "funcgrad.xla_bridge"}

packages = find_packages(include=["funcgrad", "funcgrad.*"])
package_dir = {}
for folder, dotted in MAPPED.items():
    for found in find_packages(include=[folder, f"{folder}.*"]):
        name = dotted + found[len(folder) :]
        packages.append(name)
        package_dir[name] = found.replace(".", "/")

setup(packages=packages, package_dir=package_dir)
