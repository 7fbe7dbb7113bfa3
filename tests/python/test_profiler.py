"""The profiler from Python (axiom.profile, on C++'s axiom::Profiler): ops and rules by name and
pass, a custom op as one row, a range of one's own, a Chrome trace that json reads, and one
profiler at a time."""
import json
import time

import numpy as np
import pytest

import axiom


def leaf(*shape):
    return axiom.from_numpy(np.random.default_rng(1).uniform(-1, 1, size=shape), requires_grad=True)


@axiom.custom_op("py_profiled_square")
def square(x):
    return x * x


square.backward(lambda ctx: [ctx.grad_output * ctx.inputs[0] * 2.0])


def test_a_profile_names_ops_and_rules_a_custom_op_and_a_range():
    x, w = leaf(2, 3), leaf(3, 4)
    with axiom.profile() as prof:
        with axiom.profile_range("setup"):
            time.sleep(0.02)
        square(axiom.matmul(x, w)).sum().backward()
    rows = {(row.name, row.pass_name): row for row in prof.rows()}
    assert rows[("matmul", "forward")].flops == 2 * 2 * 3 * 4
    assert ("matmul", "backward") in rows and rows[("matmul", "backward")].kind == "rule"
    assert ("py_profiled_square", "forward") in rows and ("mul", "forward") not in rows
    assert rows[("setup", "")].seconds >= 0.019
    assert "matmul" in prof.table() and prof.csv().startswith("op,kind,pass,calls")
    trace = json.loads(prof.chrome_trace())
    assert {event["ph"] for event in trace["traceEvents"]} == {"X"}
    assert any(event["name"] == "py_profiled_square" for event in trace["traceEvents"])


def test_one_profiler_at_a_time_and_a_profile_read_too_soon():
    with axiom.profile():
        with pytest.raises(axiom.Error, match=r"^\[Profiler\] a profiler is running already"):
            with axiom.profile():
                pass
    waiting = axiom.profile()
    with pytest.raises(RuntimeError, match="the profile is ready when its `with` block has ended"):
        waiting.table()
