"""The Axial Transformer in axiom against the same model written in PyTorch from the paper
(torch_reference.AxialTransformer, apps/bench/torch_reference.py: the benches' model), with the same
weights loaded into both through one safetensors file: logits, the loss in bits/dim and the gradient
of every parameter, in float64.

The weights are random everywhere (axiom starts the residual branches' output projections and the
logits layer at zero, which would hide most of the network from the comparison). The images have
three channels, so the channel encoder runs, and are not square, so rows and columns cannot be
confused."""
import numpy as np
import pytest
import torch

import axiom
import torch_reference

HEIGHT, WIDTH, CHANNELS = 4, 5, 3


def config():
    c = axiom.models.preset("tiny")
    c.height, c.width, c.channels = HEIGHT, WIDTH, CHANNELS
    c.features, c.heads, c.upper_layers, c.row_layers, c.encoder_layers = 8, 2, 2, 2, 2
    return c


def torch_model(channels):
    """The PyTorch model of config(), in float64, with `channels` channels."""
    c = dict(torch_reference.preset("tiny"), height=HEIGHT, width=WIDTH, channels=channels)
    c.update(features=8, heads=2, upper_layers=2, row_layers=2, encoder_layers=2)
    return torch_reference.AxialTransformer(c, dtype=torch.float64)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(axiom's model, PyTorch's model), in float64, holding the same random weights."""
    ours = axiom.models.AxialTransformer(config(), seed=0)
    ours.to(axiom.float64)
    rng = np.random.default_rng(1)
    weights = {name: rng.normal(0, 0.5, size=p.shape) for name, p in ours.named_parameters()}
    path = str(tmp_path_factory.mktemp("weights") / "axial.safetensors")
    axiom.safetensors.save(path, weights)
    ours.load(path)
    theirs = torch_model(CHANNELS)
    arrays, _ = axiom.safetensors.load(path)
    theirs.load_state_dict({name: torch.from_numpy(array) for name, array in arrays.items()})
    return ours, theirs


def batch():
    images = np.random.default_rng(2).integers(0, 256, size=(3, CHANNELS, HEIGHT, WIDTH))
    channel = np.array([0, 2, 1], dtype=np.int64)
    return images, channel


def test_the_same_parameters_by_the_same_names(models):
    ours, theirs = models
    assert [name for name, _ in ours.named_parameters()] == [name for name, _ in theirs.named_parameters()]


def test_logits_equal_pytorchs(models):
    ours, theirs = models
    images, channel = batch()
    ours_logits = ours.logits(axiom.from_numpy(images), axiom.from_numpy(channel))
    theirs_logits = theirs(torch.from_numpy(images), torch.from_numpy(channel))
    np.testing.assert_allclose(np.asarray(ours_logits.detach()), theirs_logits.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_loss_and_every_gradient_equal_pytorchs(models):
    ours, theirs = models
    images, channel = batch()
    ours.zero_grad()
    logits = ours.logits(axiom.from_numpy(images), axiom.from_numpy(channel))
    targets = axiom.from_numpy(images[np.arange(3), channel].copy())
    ours_loss = axiom.cross_entropy(logits, targets) / float(np.log(2))
    ours_loss.backward()
    theirs.zero_grad()
    theirs_loss = theirs.loss(torch.from_numpy(images), torch.from_numpy(channel))
    theirs_loss.backward()
    assert ours_loss.item() == pytest.approx(theirs_loss.item(), rel=1e-12)
    their_grads = {name: p.grad for name, p in theirs.named_parameters()}
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(np.asarray(p.grad), their_grads[name].numpy(), rtol=1e-8, atol=1e-11, err_msg=name)


def test_the_training_loss_of_one_channel_images_is_the_same_bits(models):
    """model.loss (one channel per example, drawn) on single-channel data: the loss PyTorch gives."""
    c = config()
    c.channels = 1
    ours = axiom.models.AxialTransformer(c, seed=3)
    ours.to(axiom.float64)
    theirs = torch_model(1)
    rng = np.random.default_rng(4)
    state = {name: rng.normal(0, 0.5, size=p.shape) for name, p in ours.named_parameters()}
    ours.load_state_dict(state)
    theirs.load_state_dict({name: torch.from_numpy(v) for name, v in state.items()})
    images = rng.integers(0, 256, size=(2, HEIGHT, WIDTH)).astype(np.uint8)
    ours_bits = ours.loss(axiom.from_numpy(images)).item()
    theirs_bits = theirs.loss(torch.from_numpy(images[:, None].astype(np.int64)), torch.zeros(2, dtype=torch.int64)).item()
    assert ours_bits == pytest.approx(theirs_bits, rel=1e-12)
