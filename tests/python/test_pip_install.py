"""`pip install .` into a virtual environment, offline, through pyproject.toml and
apps/python/wheel_backend.py. The build reuses this build tree (`--config-settings build-dir=`),
so the test takes seconds; a build from nothing is the same code with a fresh tree."""

import base64
import hashlib
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

SOURCE_DIR = pathlib.Path(os.environ["AXIOM_SOURCE_DIR"])
BUILD_DIR = pathlib.Path(os.environ["AXIOM_BUILD_DIR"])


def run(command, **kwargs):
    """Runs a command with no PYTHONPATH, so that only what pip installed can be imported."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([str(part) for part in command], env=env, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    made = run([sys.executable, "-m", "venv", "--system-site-packages", root])
    assert made.returncode == 0, made.stderr
    return root


def pip_install(venv, *settings):
    return run([venv / "bin" / "pip", "install", "--no-index", *settings, SOURCE_DIR], cwd=venv)


def test_pip_install_then_import_then_uninstall(venv):
    installed = pip_install(venv, "--config-settings", f"build-dir={BUILD_DIR}")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed axiom-" in installed.stdout

    program = "import axiom; print(axiom.__file__); print(axiom.tensor([1.0, 2.0, 3.0]).sum().item())"
    imported = run([venv / "bin" / "python", "-c", program], cwd=venv)
    assert imported.returncode == 0, imported.stderr
    where, value = imported.stdout.split()
    assert pathlib.Path(where).is_relative_to(venv / "lib")  # the installed copy, not the build tree's
    assert float(value) == 6.0

    removed = run([venv / "bin" / "pip", "uninstall", "-y", "axiom"], cwd=venv)
    assert removed.returncode == 0, removed.stderr
    assert not pathlib.Path(where).exists()
    assert not list((venv / "lib").glob("python3*/site-packages/axiom*"))


def test_the_wheel_records_every_file_with_its_hash(venv, tmp_path):
    built = run([venv / "bin" / "pip", "wheel", "--no-index", "--no-deps", "-w", tmp_path,
                 "--config-settings", f"build-dir={BUILD_DIR}", SOURCE_DIR], cwd=venv)
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel_path] = tmp_path.glob("axiom-*.whl")
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"-{tag}-{tag}-linux_" in wheel_path.name

    with zipfile.ZipFile(wheel_path) as wheel:
        names = set(wheel.namelist())
        [record_name] = [name for name in names if name.endswith(".dist-info/RECORD")]
        recorded = set()
        for line in wheel.read(record_name).decode().splitlines():
            path, digest, size = line.split(",")
            recorded.add(path)
            if path == record_name:
                continue
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}", path
            assert int(size) == len(data), path
    assert recorded == names
    assert "axiom/__init__.py" in names and any(name.startswith("axiom/_axiom") for name in names)


def test_a_build_dir_that_is_not_a_cmake_tree_is_refused(venv, tmp_path):
    refused = pip_install(venv, "--config-settings", f"build-dir={tmp_path}")
    assert refused.returncode != 0
    assert f"build-dir {tmp_path} is not a configured CMake tree (no CMakeCache.txt)" in refused.stdout + refused.stderr


def test_without_debians_numpy_pip_says_what_is_missing(tmp_path):
    bare = tmp_path / "bare"  # a virtual environment that does not see Debian's packages
    made = run([sys.executable, "-m", "venv", bare])
    assert made.returncode == 0, made.stderr
    refused = pip_install(bare, "--config-settings", f"build-dir={BUILD_DIR}")
    assert refused.returncode != 0
    assert "No matching distribution found for numpy" in refused.stderr
