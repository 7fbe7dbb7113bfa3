"""The suites' PyTorch oracle is the benches' one: apps/bench/torch_reference.py, imported as
torch_reference (the same model, its attention() and shift())."""
import os
import sys

SOURCE_DIR = os.environ.get("AXIOM_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(SOURCE_DIR, "apps", "bench"))
