"""apps/bench/same_run.py, the script that makes the README's training-step and sampling tables: it
runs each side in turn, round after round, and prints medians. Here the sides are stand-ins that print
known figures, one set per run, so that the medians and ratios can be checked exactly."""
import os
import stat
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "apps", "bench", "same_run.py")

# The start of every stand-in: each run's arguments are appended to a file beside it, and its N-th
# run's figure $value is VALUES[N] (a counter file beside it); $config is the --config.
FAKE_START = """#!/bin/sh
echo "$@" >> "$0.args"
counter="$0.count"
n=$(cat "$counter" 2>/dev/null || echo 0)
echo $((n + 1)) > "$counter"
value=$(echo "{values}" | cut -d' ' -f$((n + 1)))
config=$4
"""

# A stand-in for `axiom bench train --json`: the N-th run's step takes VALUES[N] s, its products at
# the best rate always 1.0 s.
FAKE_AXIOM = FAKE_START + """echo "some text line"
echo "{{\\"bench\\": \\"train\\", \\"case\\": \\"${{config}}_step\\", \\"value\\": $value, \\"unit\\": \\"s\\"}}"
echo "{{\\"bench\\": \\"train\\", \\"case\\": \\"${{config}}_products_at_best_rate\\", \\"value\\": 1.0, \\"unit\\": \\"s\\"}}"
"""


def fake(tmp_path, name, values, script=FAKE_AXIOM):
    path = tmp_path / name
    path.write_text(script.format(values=" ".join(str(v) for v in values)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_medians_of_alternating_runs(tmp_path):
    axiom = fake(tmp_path, "axiom", [2.0, 1.25, 4.0])  # median 2.0; limit / step 0.5, 0.8, 0.25
    before = fake(tmp_path, "before", [3.0, 5.0, 2.5])  # median 3.0
    run = subprocess.run([sys.executable, SCRIPT, "--axiom", axiom, "--before", before, "--configs", "tiny",
                          "--rounds", "3"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    table = run.stdout.splitlines()
    assert "medians of 3 alternating runs" in table[0]
    assert table[-1] == "| tiny | 3.00 s | 2.00 s | 1.00 s | 0.50 (0.25-0.80) |"
    assert (tmp_path / "axiom.count").read_text().strip() == "3"


def test_a_failing_side_stops_the_script(tmp_path):
    broken = tmp_path / "axiom"
    broken.write_text("#!/bin/sh\necho 'axiom: no such config' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    run = subprocess.run([sys.executable, SCRIPT, "--axiom", str(broken), "--configs", "tiny", "--rounds", "1"],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "no such config" in run.stderr


def test_both_builds_run_in_the_same_precision(tmp_path):
    axiom = fake(tmp_path, "axiom", [1.0])
    before = fake(tmp_path, "before", [1.0])
    run = subprocess.run([sys.executable, SCRIPT, "--axiom", axiom, "--before", before, "--configs", "tiny",
                          "--rounds", "1", "--precision", "bfloat16"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for side in ("axiom", "before"):  # the flag's first name, which older builds know too
        assert "--matmul bfloat16" in (tmp_path / f"{side}.args").read_text(), side
    assert "bfloat16 products" in run.stdout.splitlines()[0]


# A stand-in for `axiom bench sample --json`: its N-th run's fast sampler takes VALUES[N] ms per
# image at batch 1 and VALUES[N] + 0.5 at batch 16.
FAKE_SAMPLER = FAKE_START + """echo "{{\\"bench\\": \\"sample\\", \\"case\\": \\"${{config}}_fast_batch1\\", \\"value\\": $value, \\"unit\\": \\"ms/image\\"}}"
echo "{{\\"bench\\": \\"sample\\", \\"case\\": \\"${{config}}_fast_batch16\\", \\"value\\": $value.5, \\"unit\\": \\"ms/image\\"}}"
"""


def test_sampling_medians_of_alternating_runs(tmp_path):
    axiom = fake(tmp_path, "axiom", [20, 40, 30], FAKE_SAMPLER)
    before = fake(tmp_path, "before", [50, 10, 60], FAKE_SAMPLER)
    run = subprocess.run([sys.executable, SCRIPT, "--sample", "--axiom", axiom, "--before", before,
                          "--configs", "tiny", "--rounds", "3"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    table = run.stdout.splitlines()
    assert "the fast sampler, medians of 3 alternating runs" in table[0]
    assert table[-4:] == ["| ms/image | before | axiom |", "|---|---|---|",
                          "| sampling tiny, batch 1 | 50.0 | 30.0 |", "| sampling tiny, batch 16 | 50.5 | 30.5 |"]
    for side in ("axiom", "before"):
        assert (tmp_path / f"{side}.args").read_text().splitlines() == ["bench sample --config tiny --json --threads 2"] * 3


def test_sampling_has_no_precision(tmp_path):
    run = subprocess.run([sys.executable, SCRIPT, "--sample", "--precision", "bfloat16", "--configs", "tiny"],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "--sample runs in float32" in run.stderr


@pytest.mark.parametrize("flag, value", [("--rounds", "0"), ("--rounds", "-3"), ("--rounds", "two"),
                                         ("--threads", "0"), ("--threads", "-1")])
def test_rounds_and_threads_are_at_least_one(tmp_path, flag, value):
    axiom = fake(tmp_path, "axiom", [2.0])
    run = subprocess.run([sys.executable, SCRIPT, "--axiom", axiom, "--configs", "tiny", flag, value, "--torch"],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stderr  # argparse's usage error, before any side runs
    assert f"argument {flag}: '{value}' is not a whole number of at least 1" in run.stderr
    assert not (tmp_path / "axiom.count").exists()
