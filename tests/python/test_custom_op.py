"""Custom ops from Python (axiom.custom_op, on C++'s axiom::CustomOp): the op checked to second
order by gradcheck and gradgradcheck, a wrong backward caught, once_differentiable, Python
exceptions arriving intact with the op's name, and each misuse an error with its message."""
import numpy as np
import pytest

import axiom

rng = np.random.default_rng(3)


def leaf(*shape):
    return axiom.from_numpy(rng.uniform(-2, 2, size=shape), requires_grad=True)


@axiom.custom_op("py_softplus")
def softplus(x):
    return axiom.log(axiom.exp(x) + 1.0)


@softplus.backward
def softplus_backward(ctx):
    return [ctx.grad_output * axiom.sigmoid(ctx.inputs[0])]


@axiom.custom_op("py_scaled_product")
def scaled_product(x, y):
    return x * y * 3.0


@scaled_product.backward
def scaled_product_backward(ctx):
    x, y = ctx.inputs
    g = ctx.grad_output * 3.0
    return [g * y if ctx.needs[0] else None, g * x if ctx.needs[1] else None]


def test_a_custom_op_records_under_its_name_and_passes_gradcheck_and_gradgradcheck():
    x, y = leaf(2, 3), leaf(3)
    assert softplus(x).grad_fn.name() == "py_softplus"
    np.testing.assert_allclose(np.asarray(softplus(x).detach()), np.log1p(np.exp(np.asarray(x.detach()))), rtol=1e-12)
    assert axiom.gradcheck(softplus, (x,)) and axiom.gradgradcheck(softplus, (x,))
    assert axiom.gradcheck(scaled_product, (x, y)) and axiom.gradgradcheck(scaled_product, (x, y))
    constant = axiom.from_numpy(rng.uniform(-2, 2, size=(2, 3)))
    assert axiom.gradcheck(scaled_product, (x, constant))


def test_a_wrong_backward_fails_gradcheck_naming_the_input():
    @axiom.custom_op("py_wrong_softplus")
    def wrong(x):
        return axiom.log(axiom.exp(x) + 1.0)

    @wrong.backward
    def _(ctx):
        return [ctx.grad_output * axiom.tanh(ctx.inputs[0])]

    result = axiom.gradcheck(wrong, (leaf(2, 3),))
    assert not result
    assert "with respect to input 0" in result.message


def test_a_once_differentiable_backward_refuses_a_second_derivative():
    @axiom.custom_op("py_opaque_softplus", once_differentiable=True)
    def opaque(x):
        return axiom.log(axiom.exp(x) + 1.0)

    opaque.backward(softplus_backward)
    x = leaf(4)
    (dy,) = axiom.grad(opaque(x).sum(), [x], create_graph=True)
    np.testing.assert_allclose(np.asarray(dy.detach()), 1 / (1 + np.exp(-np.asarray(x.detach()))), rtol=1e-12)
    with pytest.raises(axiom.Error, match=r"^\[py_opaque_softplus\] the backward is once_differentiable: its "
                                          r"gradients cannot be differentiated again$"):
        axiom.grad(dy.sum(), [x])


def test_a_jvp_rule_gives_forward_mode_through_a_once_differentiable_op():
    @axiom.custom_op("py_opaque_softplus_jvp", once_differentiable=True)
    def opaque(x):
        return axiom.log(axiom.exp(x) + 1.0)

    opaque.backward(softplus_backward)

    @opaque.jvp
    def opaque_jvp(inputs, tangents):
        return tangents[0] * axiom.sigmoid(inputs[0])

    x, u = leaf(2, 3), leaf(2, 3).detach()
    _, tangent = axiom.jvp(opaque, x, tangents=u)
    _, expected = axiom.jvp(softplus, x, tangents=u)
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(expected), rtol=1e-12)
    with pytest.raises(axiom.Error, match=r"^\[py_opaque_softplus_jvp\] the backward is once_differentiable"):
        axiom.hvp(lambda t: opaque(t).sum(), x, v=u)
    with pytest.raises(RuntimeError, match=r"^custom op 'py_opaque_softplus_jvp' has been called already: "
                                           r"decorate its jvp before$"):
        opaque.jvp(opaque_jvp)


def test_a_jvp_rules_exception_and_wrong_result_name_the_op():
    @axiom.custom_op("py_jvp_raises", once_differentiable=True)
    def raises(x):
        return x * 2.0

    raises.backward(lambda ctx: [ctx.grad_output * 2.0])

    @raises.jvp
    def raising_jvp(inputs, tangents):
        raise ZeroDivisionError("in the jvp")

    x = leaf(3)
    with pytest.raises(ZeroDivisionError, match="in the jvp") as caught:
        axiom.jvp(raises, x, tangents=x.detach())
    assert "(in the jvp of custom op 'py_jvp_raises')" in caught.value.__notes__

    @axiom.custom_op("py_jvp_returns_a_number", once_differentiable=True)
    def numbered(x):
        return x * 2.0

    numbered.backward(lambda ctx: [ctx.grad_output * 2.0])
    numbered.jvp(lambda inputs, tangents: 1.0)
    with pytest.raises(TypeError, match=r"^the jvp must return an axiom.Tensor, got 1.0$"):
        axiom.jvp(numbered, x, tangents=x.detach())

    with pytest.raises(axiom.Error, match=r"^\[py_jvp_not_needed\] a jvp rule is for a once_differentiable op"):
        needless = axiom.custom_op("py_jvp_not_needed")(lambda t: t * 2.0)
        needless.backward(lambda ctx: [ctx.grad_output * 2.0])
        needless.jvp(lambda inputs, tangents: tangents[0] * 2.0)
        needless(x)


def test_python_exceptions_arrive_intact_with_the_ops_name():
    class Mine(Exception):
        pass

    @axiom.custom_op("py_raising")
    def raising(x):
        if x.shape[0] == 1:
            raise Mine("forward refused")
        return x * 2.0

    @raising.backward
    def _(ctx):
        raise Mine("backward refused")

    with pytest.raises(Mine, match="^forward refused$") as forward:
        raising(leaf(1))
    assert forward.value.__notes__ == ["(in the forward of custom op 'py_raising')"]
    with pytest.raises(Mine, match="^backward refused$") as backward:
        raising(leaf(2)).sum().backward()
    assert backward.value.__notes__ == ["(in the backward of custom op 'py_raising')"]


def op_whose_backward_returns(name, gradients):
    op = axiom.custom_op(name)(lambda x: x * 2.0)
    op.backward(gradients)
    return op


@pytest.mark.parametrize("name, gradients, error, message", [
    ("py_count", lambda c: [c.grad_output, c.grad_output], axiom.Error,
     r"^\[py_count\] the backward returned 2 gradients for 1 inputs$"),
    ("py_none", lambda c: [None], axiom.Error,
     r"^\[py_none\] the backward returned no gradient for input 0, which needs one$"),
    ("py_shape", lambda c: [c.grad_output.sum(0)], axiom.Error,
     r"^\[py_shape\] the backward's gradient for input 0 has shape \[3\]; the input has \[2, 3\]$"),
    ("py_dtype", lambda c: [c.grad_output.to(axiom.float32)], axiom.Error,
     r"^\[py_dtype\] the backward's gradient for input 0 is float32; the input is float64$"),
    ("py_number", lambda c: [2.0], TypeError,
     r"^custom op 'py_number': the backward returned 2.0 where a Tensor or None belongs$"),
    ("py_nothing", lambda c: None, TypeError,
     r"^custom op 'py_nothing': the backward must return a Tensor or a sequence of Tensors and Nones, got None$"),
])
def test_a_backward_that_returns_the_wrong_thing_is_an_error_naming_the_op(name, gradients, error, message):
    op = op_whose_backward_returns(name, gradients)
    x = leaf(2, 3)
    with pytest.raises(error, match=message):
        op(x).sum().backward()


def test_misuse_of_the_decorator_and_of_names():
    with pytest.raises(axiom.Error, match=r"^\[py_softplus\] a custom op of this name is defined already; define each op once$"):
        again = axiom.custom_op("py_softplus")(lambda x: x)
        again.backward(softplus_backward)
        again(leaf(2))  # the op is made on its first call
    unfinished = axiom.custom_op("py_unfinished")(lambda x: x)
    with pytest.raises(RuntimeError, match=r"^custom op 'py_unfinished' has no backward: define one with @<lambda>.backward$"):
        unfinished(leaf(2))
    with pytest.raises(TypeError, match=r"^custom op 'py_softplus' takes Tensors, got 1.0$"):
        softplus(1.0)
