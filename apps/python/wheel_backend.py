"""`pip install .` for axiom: a PEP 517 build backend that drives the CMake build.

pip reads `pyproject.toml` at the top of the repository, which names this file as its build
backend. The backend needs nothing from the network: no setuptools, no scikit-build, only the
CMake, compiler and Debian packages that `apps/install-deps.sh` installs. It

1. configures the CMake tree (Release, no test suites) in `build-pip/` beside the sources, for
   the Python that runs pip (a virtual environment's, say), unless `build-dir` names a tree
   that is already configured (`pip install . --config-settings build-dir=build` reuses the
   build of the README's commands);
2. builds the target `axiom_python` (the compiled `axiom._axiom` and the package's Python files,
   laid out in `<build>/python/axiom`);
3. zips that folder into a wheel, with the metadata pip records for `pip uninstall`.

The wheel is for this machine: the module links the Debian libraries it was built against
(OpenBLAS, oneTBB, oneDNN, ...). It requires NumPy, which pip cannot download offline: make the
environment with `python3 -m venv --system-site-packages`, so that it sees Debian's python3-numpy
(and python3-torch, for the comparisons with PyTorch).
"""

import base64
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import zipfile

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]
NAME = "axiom"


def _version():
    """The version of CMakeLists.txt's project(axiom VERSION x.y.z)."""
    text = (SOURCE_DIR / "CMakeLists.txt").read_text()
    match = re.search(r"project\(axiom VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError(f"axiom wheel: no 'project(axiom VERSION ...)' in {SOURCE_DIR / 'CMakeLists.txt'}")
    return match.group(1)


def _wheel_tag():
    """cp311-cp311-linux_x86_64 for CPython 3.11 on x86-64 Linux: the module is for this Python."""
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{python}-{python}-{platform}"


def _run(command):
    print("axiom wheel:", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def _build_tree(config_settings):
    """The CMake tree to build in: configured here unless the caller names one already configured."""
    given = (config_settings or {}).get("build-dir")
    if given:
        tree = pathlib.Path(given).resolve()
        if not (tree / "CMakeCache.txt").is_file():
            raise RuntimeError(f"axiom wheel: build-dir {tree} is not a configured CMake tree (no CMakeCache.txt)")
        return tree
    tree = SOURCE_DIR / "build-pip"
    _run(["cmake", "-S", str(SOURCE_DIR), "-B", str(tree), "-DCMAKE_BUILD_TYPE=Release",
          "-DAXIOM_BUILD_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
    return tree


def _build_package(config_settings):
    """Builds axiom_python; returns the folder holding the importable package `axiom`."""
    tree = _build_tree(config_settings)
    jobs = str((config_settings or {}).get("jobs") or os.cpu_count() or 1)
    _run(["cmake", "--build", str(tree), "--target", "axiom_python", "-j", jobs])
    package = tree / "python" / NAME
    if not any(package.glob("_axiom*.so")):
        raise RuntimeError(f"axiom wheel: no compiled module _axiom*.so in {package} "
                           "(was the tree configured with -DAXIOM_PYTHON=OFF, or without python3-dev and pybind11-dev?)")
    return package


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            "Summary: A readable deep-learning framework in C++: tensors, autograd, layers up to the Axial Transformer\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\n")


def _wheel_file():
    return f"Wheel-Version: 1.0\nGenerator: axiom wheel_backend\nRoot-Is-Purelib: false\nTag: {_wheel_tag()}\n"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def _write_wheel(wheel_path, package):
    """A wheel: the package's files, then METADATA, WHEEL and RECORD (the hash of every file)."""
    dist_info = f"{NAME}-{_version()}.dist-info"
    files = {f"{NAME}/{file.name}": file.read_bytes()
             for file in sorted(package.iterdir()) if file.suffix in (".py", ".so")}
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = _wheel_file().encode()
    record = "".join(_record_line(path, data) for path, data in files.items()) + f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode()
    with zipfile.ZipFile(wheel_path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)


# --- the PEP 517 hooks pip calls ------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []  # nothing to download: the build needs CMake and Debian's packages only


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The name and version, without building (pip asks before it builds)."""
    dist_info = pathlib.Path(metadata_directory) / f"{NAME}-{_version()}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata())
    (dist_info / "WHEEL").write_text(_wheel_file())
    return dist_info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package = _build_package(config_settings)
    name = f"{NAME}-{_version()}-{_wheel_tag()}.whl"
    _write_wheel(pathlib.Path(wheel_directory) / name, package)
    return name
