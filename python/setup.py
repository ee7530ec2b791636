"""`pip install ./python`: the infralens package with the extension module `make build` built.

The engine is built by CMake, not here: run `make build` first. The module is taken from
$INFRALENS_BUILD/python/infralens (default: ../build, the repository's build folder). On Debian 12
install into a venv that sees Debian's pandas and Dask, without build isolation (no download):

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./python

See docs/python.md.
"""

import glob
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("INFRALENS_BUILD", os.path.join(HERE, "..", "build"))


def version():
    text = open(os.path.join(HERE, "..", "CMakeLists.txt")).read()
    return re.search(r"project\(infralens VERSION ([0-9.]+)", text).group(1)


class BuildPy(build_py):
    """Copies the built extension module beside the package's Python files."""

    def run(self):
        super().run()
        built = glob.glob(os.path.join(BUILD, "python", "infralens", "_infralens*.so"))
        if not built:
            raise SystemExit(
                f"no _infralens*.so in {BUILD}/python/infralens: run `make build` first (or set "
                "INFRALENS_BUILD to the build folder)")
        dest = os.path.join(self.build_lib, "infralens")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(built[0], dest)


class BinaryDistribution(Distribution):
    """A wheel for this platform and Python (it carries a compiled module)."""

    def has_ext_modules(self):
        return True


setup(
    name="infralens",
    version=version(),
    description="Distributed-training parallelism: planner, schedules, topology, trace analysis",
    packages=["infralens"],
    package_data={"infralens": ["*.pyi", "py.typed"]},
    python_requires=">=3.9",
    cmdclass={"build_py": BuildPy},
    distclass=BinaryDistribution,
)
