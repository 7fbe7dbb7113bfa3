"""The graph, drawn, from Python: axiom.to_dot names leaves from a dict or a module's
named_parameters(), shows custom ops under their names and the graph of a gradient in its own
colour, and each name_scope as one box when collapsed; axiom.draw hands it to Graphviz (python3-graphviz), whose dot draws it."""
import numpy as np
import pytest

import axiom

rng = np.random.default_rng(5)


def leaf(*shape):
    return axiom.from_numpy(rng.uniform(-1, 1, size=shape), requires_grad=True)


def test_to_dot_names_leaves_and_draw_makes_an_svg():
    x, w = leaf(2, 3), leaf(3, 4)
    loss = axiom.tanh(axiom.matmul(x, w)).sum()
    dot = axiom.to_dot(loss, {"x": x, "w": w})
    assert dot.startswith("digraph axiom {")
    assert 'label="w\\n[3, 4] float64\\nrequires_grad"' in dot
    assert dot.count(" -> ") == 4  # x and w into matmul, matmul into tanh, tanh into sum
    svg = axiom.draw([loss], [("x", x), ("w", w)]).pipe(format="svg").decode()
    assert "<svg" in svg and ">matmul<" in svg


def test_a_modules_parameters_and_a_custom_op_appear_by_name():
    layer = axiom.nn.Dense(3, 2, generator=axiom.Generator(1))

    @axiom.custom_op("graph_py_square")
    def square(x):
        return x * x

    square.backward(lambda ctx: [ctx.grad_output * ctx.inputs[0] * 2.0])
    y = square(layer(axiom.randn(4, 3))).sum()
    dot = axiom.to_dot(y, layer.named_parameters())
    assert 'label="graph_py_square\\n[4, 2] float32"' in dot
    assert 'label="weight\\n[3, 2] float32\\nrequires_grad"' in dot and 'label="bias' in dot


def test_the_graph_of_a_gradient_is_filled_orange():
    x = leaf(4)
    (dx,) = axiom.grad((axiom.tanh(x) * x).sum(), [x], create_graph=True)
    dot = axiom.to_dot(dx, {"x": x})
    assert 'fillcolor="#fdd0a2"' in dot
    assert 'label="tanh\\n[4] float64"]' in dot  # the forward's tanh, which the gradient uses, stays white


def test_name_scopes_nest_and_collapse_draws_each_as_one_box():
    x = leaf(3)
    h = x
    for i in range(3):
        with axiom.name_scope(f"block.{i}"):
            with axiom.name_scope("inner"):
                assert axiom.current_name_scope() == f"block.{i}/inner"
                h = axiom.tanh(h) * 2.0
    assert axiom.current_name_scope() == ""
    loss = h.sum()
    dot = axiom.to_dot(loss, {"x": x}, collapse=1)
    assert dot.count("shape=box3d") == 3 and 'label="block.1\\n2 ops"' in dot
    assert 'label="block.0\\n2 ops, 1 parameter"' in dot and "ellipse" not in dot  # x: only block.0 uses it
    assert axiom.to_dot(loss, collapse=2).count("shape=box3d") == 3  # "block.1/inner"
    assert "shape=box3d" not in axiom.to_dot(loss, collapse=3)
    assert "<svg" in axiom.draw(loss, collapse=1).pipe(format="svg").decode()
    with pytest.raises(axiom.Error, match=r"^\[NameScope\] a scope's name is not empty and has no '/'"):
        axiom.name_scope("a/b")


def test_grad_fn_is_a_node_with_next_functions_as_in_pytorch():
    x = leaf(3)
    y = (x * 3.0).tanh().sum()
    assert y.grad_fn.name() == "sum" and repr(y.grad_fn) == "<axiom.Node sum>"
    (tanh, index), = y.grad_fn.next_functions
    assert tanh.name() == "tanh" and index == 0
    (mul, _), = tanh.next_functions
    (accumulate, _), (constant, _) = mul.next_functions
    assert accumulate.name() == "AccumulateGrad" and constant is None
    assert accumulate.variable.shape == (3,) and accumulate.variable.requires_grad
    assert x.grad_fn is None
    y.backward()
    assert y.grad_fn.next_functions == ()  # the graph is freed after backward
