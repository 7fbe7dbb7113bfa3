"""Every Python block of every README runs: the blocks of one README in order, in one namespace (a
later block may use what an earlier one made), as a reader would type them. A block that raises fails
here, naming the README and the block's first line. (The C++ blocks that are whole programs are
built and run by tests/docs/CMakeLists.txt.)"""
import os
import re
import subprocess

import pytest

SOURCE_DIR = os.environ.get("AXIOM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def readmes_with_python():
    files = subprocess.run(["git", "ls-files", "*README.md"], cwd=SOURCE_DIR, capture_output=True, text=True).stdout.split()
    if not files:  # (a source tree without git: every README under the root)
        files = [os.path.relpath(os.path.join(d, "README.md"), SOURCE_DIR)
                 for d, _, names in os.walk(SOURCE_DIR) if "README.md" in names and "/build" not in d]
    found = []
    for name in sorted(files):
        with open(os.path.join(SOURCE_DIR, name)) as f:
            blocks = re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)
        if blocks:
            found.append((name, blocks))
    return found


READMES = readmes_with_python()


def test_the_readmes_have_python_blocks():
    assert any(name == "README.md" for name, _ in READMES)


@pytest.mark.parametrize("name, blocks", READMES, ids=[name for name, _ in READMES])
def test_every_python_block_runs(name, blocks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # what a block writes lands here
    namespace = {"__name__": "__readme__"}
    for block in blocks:
        first_line = block.strip().splitlines()[0]
        try:
            exec(compile(block, f"{name}: block starting '{first_line}'", "exec"), namespace)  # noqa: S102
        except Exception as error:
            pytest.fail(f"{name}: the block starting '{first_line}' raised {type(error).__name__}: {error}")
