"""Builds numfn's C extensions with the package, so a wheel carries them and `import numfn` compiles nothing.

  numfn.runtime._numfn_native    every .c file in numfn/runtime/csrc/: the thread pool of parallel kernels and the
                                 native routines generated programs call. To add a routine, add a .c file there and
                                 list the routine in numfn_native.h and in the table in csrc/module.c.
  numfn.runtime._numfn_dispatch  numfn/runtime/_dispatch.c: the fast call path of jit functions (NumPy's C API).

The two are independent (kernels keep their threads without the dispatcher) and both optional: without a C compiler
or Python's headers the build says so and installs the pure-Python package, whose calls take the slower Python path
and whose kernels run on one thread. The build then says so loudly (on the terminal too: pip hides a build's
output unless -v), NUMFN_REQUIRE_EXTENSIONS=1 makes it fail instead (wheel builds set it: tools/build_wheel.sh),
and numfn warns once at run time (numfn.runtime.extensions).
"""
import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join("numfn", "runtime", "csrc")
POSIX_THREADS = [] if sys.platform == "win32" else ["-pthread"]


class BuildExtensions(build_ext):
    """build_ext that adds NumPy's headers only where needed (NumPy is a build requirement, see pyproject.toml) and
    says clearly what an install without the extensions loses."""

    def build_extension(self, ext):
        if ext.name.endswith("_numfn_dispatch"):
            try:
                import numpy
            except ImportError:
                self.warn("numfn: NumPy is not importable at build time; skipping the fast call extension")
                return
            ext.include_dirs.append(numpy.get_include())
        super().build_extension(ext)

    def run(self):
        super().run()
        missing = [e.name for e in self.extensions if not os.path.exists(self.get_ext_fullpath(e.name))]
        if missing:
            _say_loudly(f"numfn: built without {', '.join(missing)} (no working C compiler or Python headers?): "
                        "numfn works, but calls take the slower Python path (about 10 us instead of 0.2 us) and "
                        "kernels run on one thread. Install a C compiler (e.g. apt-get install gcc python3-dev) "
                        "and reinstall, or install a prebuilt wheel (README: Wheels).")
            if os.environ.get("NUMFN_REQUIRE_EXTENSIONS", "") not in ("", "0"):
                raise SystemExit("numfn: NUMFN_REQUIRE_EXTENSIONS is set and the extensions were not built")
        if not self.inplace: self._copy_into_checkout()

    def _copy_into_checkout(self):
        """Also put the built extensions next to their sources, as `build_ext --inplace` would: `python -m pytest
        tests` in a checkout imports numfn from the checkout, not from where `pip install .` put it, and the tests
        must run against the extensions (README: pip install '.[test]' && python -m pytest tests)."""
        import shutil
        for ext in self.extensions:
            built = self.get_ext_fullpath(ext.name)
            target = os.path.join(HERE, *ext.name.split(".")[:-1], os.path.basename(built))
            if os.path.exists(built) and os.path.isdir(os.path.dirname(target)):
                # a new file renamed over the old one: a process that has the old one mapped keeps it intact
                shutil.copyfile(built, target + ".tmp")
                os.replace(target + ".tmp", target)


def _say_loudly(message: str) -> None:
    """A warning the user sees: pip shows a build's output only with -v, so the message also goes to the
    terminal pip runs in (/dev/tty) when there is one, framed so it stands out."""
    framed = "\n" + "!" * 100 + "\n" + message + "\n" + "!" * 100 + "\n"
    sys.stderr.write(framed)
    sys.stderr.flush()
    try:
        with open("/dev/tty", "w") as tty: tty.write(framed)
    except OSError:
        pass   # no terminal (CI, a container): the build log and numfn's warning at the first call remain


native_sources = sorted(glob.glob(os.path.join(CSRC, "*.c"), root_dir=HERE))   # paths relative to setup.py

def _license_metadata() -> dict:
    """numfn's license (pyproject.toml lists it as dynamic): an SPDX expression where setuptools knows them (77 and
    later, PEP 639), the plain License field before. pyproject.toml cannot say it for both: setuptools before 77
    refuses a string `project.license`, and later ones deprecate the table form (an error from 2027-02-18). A
    build without isolation finds whatever setuptools the environment has (Python 3.11's venv brings 65.5)."""
    import setuptools
    try:
        major = int(setuptools.__version__.split(".")[0])
    except ValueError:
        major = 0
    return {"license_expression": "MIT"} if major >= 77 else {"license": "MIT"}


setup(
    **_license_metadata(),
    ext_modules=[
        Extension("numfn.runtime._numfn_native", sources=native_sources, depends=[os.path.join(CSRC, "numfn_native.h")],
                  extra_compile_args=POSIX_THREADS, extra_link_args=POSIX_THREADS, optional=True),
        Extension("numfn.runtime._numfn_dispatch", sources=[os.path.join("numfn", "runtime", "_dispatch.c")],
                  optional=True),
    ],
    cmdclass={"build_ext": BuildExtensions},
)
