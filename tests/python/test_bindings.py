"""The Python module itself: NumPy sharing, exceptions, repr, indexing, grad mode, the GIL, Ctrl-C,
the layers and the optimizers, as a Python user meets them."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import axiom


# --- NumPy without copies ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_from_numpy_shares_memory_for_the_four_dtypes(dtype):
    array = np.arange(6, dtype=dtype).reshape(2, 3)
    t = axiom.from_numpy(array)
    array[1, 2] = 42
    assert t[1, 2].item() == 42
    back = np.asarray(t)
    assert np.shares_memory(back, array)
    assert back.dtype == dtype


def test_strided_arrays_are_shared_with_their_strides():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base[1:, ::2].T  # [3, 3], neither row- nor column-major
    t = axiom.from_numpy(view)
    assert t.shape == (3, 3) and not t.is_contiguous()
    assert t.stride() == (2, 6)
    base[2, 4] = -1.0
    assert t[2, 1].item() == -1.0
    np.testing.assert_array_equal(np.asarray(t), view)
    np.testing.assert_array_equal(np.asarray(t.transpose(0, 1)), view.T)


def test_arrays_that_cannot_be_shared_are_copied_and_converted():
    cases = [np.arange(4.0)[::-1],                                 # a negative stride
             np.arange(4, dtype=">f8"),                       # big-endian
             np.array([True, False]),                         # bool -> uint8
             np.arange(3, dtype=np.int32),                    # int32 -> int64
             np.arange(3, dtype=np.float16)]                  # float16 -> float32
    readonly = np.arange(3.0)
    readonly.setflags(write=False)
    cases.append(readonly)
    expected = [axiom.float64, axiom.float64, axiom.uint8, axiom.int64, axiom.float32, axiom.float64]
    for array, dtype in zip(cases, expected):
        t = axiom.from_numpy(array)
        assert t.dtype == dtype
        np.testing.assert_array_equal(np.asarray(t), array.astype(np.asarray(t).dtype))
        assert not np.shares_memory(np.asarray(t), array)


def test_a_tensor_keeps_its_array_alive_and_an_array_its_tensor():
    t = axiom.from_numpy(np.full((1000,), 3.0))
    del_array_then_use = (t * 2).sum().item()
    assert del_array_then_use == 6000.0
    array = np.asarray(axiom.full([5], 2.0))  # the tensor is gone; the array holds it
    assert array.sum() == 10.0


def test_numpy_refuses_a_tensor_that_requires_a_gradient():
    x = axiom.zeros([2], dtype=axiom.float64).requires_grad_()
    with pytest.raises(TypeError, match="detach"):
        np.asarray(x)
    assert np.asarray(x.detach()).shape == (2,)


def test_empty_and_zero_dimensional_arrays():
    assert axiom.from_numpy(np.zeros((0, 3))).shape == (0, 3)
    assert np.asarray(axiom.zeros([0, 3])).shape == (0, 3)
    assert axiom.from_numpy(np.array(2.5)).item() == 2.5
    assert axiom.tensor(3).dtype == axiom.int64 and axiom.tensor(3.0).dtype == axiom.float64


# --- Python behaves like Python -----------------------------------------------------------------------

def test_axiom_errors_become_fitting_python_exceptions_with_the_same_message():
    a, b = axiom.zeros([2, 3]), axiom.zeros([4, 5])
    with pytest.raises(ValueError, match=r"\[matmul\] shapes \[2, 3\] and \[4, 5\]") as caught:
        a @ b
    assert isinstance(caught.value, axiom.ShapeError) and isinstance(caught.value, axiom.Error)
    with pytest.raises(TypeError):
        axiom.exp(axiom.zeros([2], dtype=axiom.int64))
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(IndexError):
        a.narrow(1, 2, 5)
    with pytest.raises(TypeError):
        axiom.zeros("three")
    with pytest.raises(ValueError):
        axiom.zeros([-1])
    with pytest.raises(axiom.Error):
        axiom.models.load_model("/nonexistent/model.safetensors")


def test_names_axiom_does_not_know_are_value_errors_that_list_the_known_ones():
    with pytest.raises(axiom.ShapeError, match=r"\[device\] unknown device 'tpu' \(cpu, cuda, cuda:N or meta\)"):
        axiom.zeros([2], device="tpu")
    with pytest.raises(axiom.ShapeError, match=r"unknown device 'cuda:x'"):
        axiom.ones([2]).to("cuda:x")
    with pytest.raises(axiom.ShapeError, match=r"\[config\] unknown preset \"huge\" \(tiny, small"):
        axiom.models.preset("huge")
    with pytest.raises(axiom.ShapeError, match=r"\[permute\] order \[0, 0\] names axis 0 twice"):
        axiom.zeros([2, 3]).permute([0, 0])
    with pytest.raises(axiom.ShapeError, match=r"\[Dense\] init must be uniform or normal, got DenseInit\(5\)"):
        axiom.nn.Dense(3, 4, init=axiom.nn.DenseInit(5))
    assert axiom.zeros([2], device="meta").device == axiom.device("meta")
    config = axiom.models.preset("tiny")
    config.height, config.width = 4, 4
    with pytest.raises(axiom.ShapeError, match=r"\[Trainer\] cannot train on the meta device"):
        axiom.models.Trainer(config, axiom.zeros([8, 4, 4], dtype=axiom.uint8), batch_size=4, device="meta")


def test_repr_shows_values_shape_dtype_device_and_history():
    x = axiom.tensor([[1.0, 2.0]], requires_grad=True)
    assert repr(x) == "tensor([[1, 2]], shape=(1, 2), dtype=float64, device=cpu, requires_grad=True)"
    assert "grad_fn=mul" in repr(x * 2)
    assert repr(axiom.zeros([2000])).startswith("tensor(..., shape=(2000,)")


def test_help_shows_signatures_and_docstrings():
    assert "requires_grad" in axiom.from_numpy.__doc__
    assert "axis" in axiom.softmax.__doc__


def test_indexing_makes_views_and_assignment_writes_through_them():
    x = axiom.from_numpy(np.arange(24.0).reshape(2, 3, 4))
    np.testing.assert_array_equal(np.asarray(x[1, :, -1]), np.arange(24.0).reshape(2, 3, 4)[1, :, -1])
    assert x[..., None].shape == (2, 3, 4, 1)
    assert x[:, 1:3:2].shape == (2, 1, 4)
    x[0, 0] = 7.0
    assert x[0, 0, 3].item() == 7.0
    assert [row.shape for row in x] == [(3, 4), (3, 4)]
    with pytest.raises(ValueError):
        x[::-1]
    with pytest.raises(TypeError):
        x["a"]


def test_no_grad_as_a_context_and_a_decorator():
    x = axiom.ones([2], dtype=axiom.float64).requires_grad_()
    with axiom.no_grad():
        assert not (x * 2).requires_grad
        with axiom.enable_grad():
            assert (x * 2).requires_grad

    @axiom.no_grad()
    def doubled(v):
        return v * 2
    assert not doubled(x).requires_grad
    assert (x * 2).requires_grad


def test_grad_hvp_and_gradcheck_from_python():
    x = axiom.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (g,) = axiom.grad((x * x * x).sum(), [x], create_graph=True)
    np.testing.assert_allclose(np.asarray(g.detach()), 3 * np.array([0.5, -1.0, 2.0]) ** 2)
    hv = axiom.hvp(lambda v: (v * v * v).sum(), x, axiom.ones([3], dtype=axiom.float64))
    np.testing.assert_allclose(np.asarray(hv), 6 * np.array([0.5, -1.0, 2.0]))
    assert axiom.gradcheck(lambda v: axiom.tanh(v) * v, (x,))
    assert axiom.gradgradcheck(lambda v: axiom.tanh(v) * v, (x,))
    with pytest.raises(TypeError, match="float64"):
        axiom.gradcheck(lambda v: v, (axiom.tensor([1.0], dtype=axiom.float32, requires_grad=True),))


def test_an_error_raised_in_a_python_function_comes_back_through_cpp():
    x = axiom.tensor([1.0], requires_grad=True)

    def broken(v):
        raise KeyError("from the function")
    with pytest.raises(KeyError, match="from the function"):
        axiom.gradcheck(broken, (x,))


def test_long_ops_release_the_gil():
    a = axiom.randn(700, 700)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        start = time.perf_counter()
        for _ in range(6):
            a @ a
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    during = [t for t in ticks if start < t < end]
    assert len(during) >= 3, "the other thread never ran while matmul held the GIL"


def test_ctrl_c_stops_a_training_loop_between_steps():
    config = axiom.models.preset("tiny")
    config.height, config.width = 4, 4
    images = axiom.from_numpy(np.random.default_rng(0).integers(0, 256, size=(8, 4, 4)).astype(np.uint8))
    trainer = axiom.models.Trainer(config, images, batch_size=4, warmup_steps=0)

    def interrupt_after_two(step, loss):
        if step == 2:
            os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        trainer.train(100, callback=interrupt_after_two)
    assert trainer.steps_done == 2


# --- layers, optimizers, models ---------------------------------------------------------------------------

class MLP(axiom.nn.Module):
    def __init__(self, generator):
        super().__init__()
        self.hidden = axiom.nn.Dense(3, 8, generator=generator)
        self.out = axiom.nn.Dense(8, 1, generator=generator)
        self.scale = axiom.ones([1]).requires_grad_()

    def forward(self, x):
        return self.out(axiom.relu(self.hidden(x))) * self.scale


def test_a_python_module_of_cpp_layers_learns_with_adam():
    gen = axiom.Generator(1)
    model = MLP(gen)
    names = [name for name, _ in model.named_parameters()]
    assert names == ["hidden.weight", "hidden.bias", "out.weight", "out.bias", "scale"]
    x = axiom.randn(64, 3, generator=gen)
    y = x.sum(1, keepdim=True)
    opt = axiom.optim.Adam(model.named_parameters(), lr=1e-2)
    losses = []
    for _ in range(200):
        loss = ((model(x) - y) ** 2.0).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]


def test_state_dict_and_safetensors_round_trip(tmp_path):
    layer = axiom.nn.Dense(3, 2, generator=axiom.Generator(5))
    path = str(tmp_path / "dense.safetensors")
    layer.save(path)
    arrays, _ = axiom.safetensors.load(path)
    assert sorted(arrays) == ["bias", "weight"]
    np.testing.assert_array_equal(arrays["weight"], np.asarray(layer.weight.detach()))
    other = axiom.nn.Dense(3, 2, generator=axiom.Generator(6))
    other.load(path)
    np.testing.assert_array_equal(np.asarray(other.weight.detach()), arrays["weight"])
    axiom.safetensors.save(path, {"weight": arrays["weight"] * 2, "bias": arrays["bias"]})
    other.load(path)
    np.testing.assert_array_equal(np.asarray(other.weight.detach()), arrays["weight"] * 2)


def test_the_axial_transformer_trains_and_samples():
    config = axiom.models.preset("tiny")
    config.height, config.width = 4, 4
    model = axiom.models.AxialTransformer(config, seed=0)
    images = axiom.from_numpy(np.random.default_rng(0).integers(0, 256, size=(2, 4, 4)).astype(np.uint8))
    loss = model.loss(images)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    samples = model.sample(count=2, seed=3)
    assert samples.shape == (2, 4, 4) and samples.dtype == axiom.uint8


# --- what a second reader found ---------------------------------------------------------------------

def test_a_fraction_beside_an_integer_tensor_is_refused_not_truncated():
    i = axiom.tensor([1, 2, 3])
    for operation in (lambda: i + 2.5, lambda: i * 0.5, lambda: 1.5 - i, lambda: axiom.add(i, 0.5)):
        with pytest.raises(TypeError, match="fractional"):
            operation()
    assert (i + 2).tolist() == [3, 4, 5]
    assert (i.double() * 0.5).tolist() == [0.5, 1.0, 1.5]


def test_overlapping_copies_through_two_tensors_over_one_array():
    array = np.arange(6.0)
    first, second = axiom.from_numpy(array), axiom.from_numpy(array)
    first[1:] = second[:-1]
    assert array.tolist() == [0, 0, 1, 2, 3, 4]
    b = axiom.from_numpy(np.arange(4.0))
    axiom.copy_into(b[:-1], b[1:])
    assert b.tolist() == [0, 0, 1, 2]


def test_numpy_scalars_on_the_left_give_tensors_with_their_graph():
    x = axiom.tensor([1.0, 2.0], requires_grad=True)
    y = np.float64(3.0) * x
    assert isinstance(y, axiom.Tensor) and y.grad_fn.name() == "mul"
    assert isinstance(np.sqrt(4.0) + x, axiom.Tensor)


def test_int64_round_trips_through_numpy_share_memory():
    t = axiom.tensor([1, 2, 3])
    array = np.asarray(t)
    again = axiom.from_numpy(array)
    array[0] = 99
    assert t[0].item() == 99 and again[0].item() == 99
    assert axiom.from_numpy(np.arange(3, dtype=np.longlong)).dtype == axiom.int64


def test_wide_numpy_types_convert_without_losing_values():
    assert axiom.from_numpy(np.array([1.0000000001], dtype=np.longdouble)).item() == 1.0000000001
    with pytest.raises(ValueError, match="uint64"):
        axiom.from_numpy(np.array([2 ** 63], dtype=np.uint64))
    assert axiom.from_numpy(np.array([2 ** 63 - 1], dtype=np.uint64)).item() == 2 ** 63 - 1
    assert int(axiom.tensor(2 ** 62 + 1)) == 2 ** 62 + 1


def test_the_buffer_protocol_meets_a_column_major_request_only_where_the_layouts_agree():
    import ctypes
    PyBUF_F_CONTIGUOUS = 0x0040 | 0x0010 | 0x0008  # with STRIDES and ND, as CPython defines it

    class Py_buffer(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                    ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                    ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                    ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]

    def fortran_buffer(t):
        view = Py_buffer()
        get = ctypes.pythonapi.PyObject_GetBuffer
        get.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
        get(t, ctypes.byref(view), PyBUF_F_CONTIGUOUS)
        ctypes.pythonapi.PyBuffer_Release(ctypes.byref(view))

    with pytest.raises(BufferError):
        fortran_buffer(axiom.zeros([2, 3]))
    fortran_buffer(axiom.zeros([1, 3]))  # one long axis: row- and column-major at once


def test_scalars_keep_their_shape_through_safetensors(tmp_path):
    path = str(tmp_path / "s.safetensors")
    axiom.safetensors.save(path, {"s": np.array(2.5), "e": np.zeros((0, 3), np.float32)})
    arrays, _ = axiom.safetensors.load(path)
    assert arrays["s"].shape == () and arrays["s"] == 2.5 and arrays["e"].shape == (0, 3)


def test_python_modules_find_layers_in_a_module_list_and_count_a_shared_layer_once():
    class Stack(axiom.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = axiom.nn.ModuleList([axiom.nn.Dense(2, 2) for _ in range(2)])
            self.first = self.blocks[0]  # the same layer under a second name

    names = [name for name, _ in Stack().named_parameters()]
    assert names == ["blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias"]

    class Listed(axiom.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [axiom.nn.Dense(2, 2)]
    with pytest.raises(TypeError, match="ModuleList"):
        Listed().named_parameters()


def test_tensors_pickle_as_values_device_and_a_leafs_requires_grad_without_the_graph():
    import copy
    import pickle
    x = axiom.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for dtype in (axiom.float32, axiom.float64, axiom.int64, axiom.uint8):
        value = axiom.tensor([[1, 2], [3, 4]], dtype=dtype).transpose(0, 1)
        back = pickle.loads(pickle.dumps(value))
        assert back.dtype == dtype and back.tolist() == [[1, 3], [2, 4]]
    leaf = pickle.loads(pickle.dumps(x))
    assert leaf.requires_grad and leaf.is_leaf and leaf.tolist() == x.tolist()
    made = pickle.loads(pickle.dumps(x * 2.0))
    assert not made.requires_grad and made.grad_fn is None and made.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    deep = copy.deepcopy(x)
    deep.detach()[0, 0] = -1.0
    assert x[0, 0].item() == 1.0  # a copy, not a view of the same memory


def test_a_freed_graph_is_a_runtime_error_that_speaks_python():
    x = axiom.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(axiom.Error) as freed:
        y.backward()
    assert type(freed.value) is axiom.Error and isinstance(freed.value, RuntimeError)
    assert str(freed.value) == ("[backward] the graph through sum was freed by an earlier backward(); pass "
                                "retain_graph=True to the first backward to go through it twice")


def test_a_gradcheck_result_shows_its_worst_error_as_python_does():
    x = axiom.tensor([0.3, 0.7], requires_grad=True)
    result = axiom.gradcheck(lambda v: (v * v).tanh(), (x,))
    assert repr(result) == f"GradcheckResult(ok=True, worst_error={result.worst_error!r})"
    assert 0 < result.worst_error < 1e-6


def test_the_matmul_precision_is_the_processs_and_refused_by_name_where_it_cannot_run():
    assert axiom.matmul_precision() == "float32"
    with pytest.raises(axiom.Error, match=r"expected float32, bfloat16 or tf32, got 'fp16'"):
        axiom.set_matmul_precision("fp16")
    assert axiom.matmul_precision() == "float32"
    a, b = axiom.randn([128, 96]), axiom.randn([96, 80])  # 983,040 multiply-adds: over 64^3, so it rounds
    exact = np.asarray(a @ b)
    try:
        axiom.set_matmul_precision("bfloat16")
    except axiom.Error as refused:  # a CPU without AVX-512 BF16, or a build without oneDNN: the reason
        assert "bfloat16" in str(refused)
        assert axiom.matmul_precision() == "float32"
        return
    try:
        assert axiom.matmul_precision() == "bfloat16"
        rounded = np.asarray(a @ b)
    finally:
        axiom.set_matmul_precision("float32")
    assert not np.array_equal(rounded, exact)
    np.testing.assert_allclose(rounded, exact, rtol=0, atol=0.5)  # 8 significant bits an operand, 96 terms
    np.testing.assert_array_equal(np.asarray(a @ b), exact)  # float32 again
