"""Reading KernelBench problem files with ``ast``: real files of levels 1-4, and what is not understood."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex.ingest.kernelbench.problem_shapes import ProblemNotReadable, TensorSpec, read_problem
from kernelindex.paths import BUNDLED_DATA

FILES = BUNDLED_DATA / "kernelbench" / "files"
FIRST = "01cad80a75a9215fc8e5229183b1a14d4d0b0d6d"  # January 2025 problem files
REVISED = "1f8d20fa06357a9c343f4508887b6da22f114752"  # after the July 2025 revision
BABEL = "df77b598fbf02478a4648e3d848778e19cd9e138"  # holds level 4


def problem(commit: str, path: str) -> str:
    return (FILES / commit / "KernelBench" / path).read_text()


def test_level1_relu_constants_and_input():
    facts = read_problem(problem(FIRST, "level1/19_ReLU.py"))
    assert facts.description == "Simple model that performs a ReLU activation."
    assert facts.constants == {"batch_size": 16, "dim": 16384}
    assert facts.inputs == {"x": TensorSpec(dtype="float32", shape=[16, 16384])}


def test_revised_problem_reads_its_new_sizes():
    facts = read_problem(problem(REVISED, "level1/19_ReLU.py"))
    assert facts.constants == {"batch_size": 4096, "dim": 393216}
    assert facts.inputs == {"x": TensorSpec(dtype="float32", shape=[4096, 393216])}


def test_inputs_are_named_by_forward_and_keep_dtype_through_arithmetic():
    # return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]
    facts = read_problem(problem(REVISED, "level1/100_HingeLoss.py"))
    assert facts.constants == {"batch_size": 32768, "dim": 1}
    assert facts.inputs == {
        "predictions": TensorSpec(dtype="float32", shape=[32768, 32768]),
        "targets": TensorSpec(dtype="float32", shape=[32768]),
    }


def test_symmetric_matrix_built_in_steps_keeps_its_shape():
    # A = torch.randn(N, N); A = (A + A.T) / 2
    facts = read_problem(problem(FIRST, "level1/13_Matmul_for_symmetric_matrices.py"))
    assert facts.inputs == {
        "A": TensorSpec(dtype="float32", shape=[4096, 4096]),
        "B": TensorSpec(dtype="float32", shape=[4096, 4096]),
    }


def test_integer_labels_and_boolean_masks():
    labels = read_problem(problem(FIRST, "level1/95_CrossEntropyLoss.py"))
    assert labels.inputs["targets"] == TensorSpec(dtype="int64", shape=[4096])
    masked = read_problem(problem(FIRST, "level1/93_masked_cumsum.py"))
    # mask = torch.randint(0, 2, x.shape).bool()
    assert masked.inputs == {
        "x": TensorSpec(dtype="float32", shape=[128, 4000]),
        "mask": TensorSpec(dtype="bool", shape=[128, 4000]),
    }


def test_python_scalar_input_is_not_a_tensor():
    facts = read_problem(problem(FIRST, "level1/5_Matrix_scalar_multiplication.py"))
    assert facts.inputs["A"] == TensorSpec(dtype="float32", shape=[16384, 4096])
    scalar = facts.inputs["s"]
    assert scalar.shape is None and scalar.dtype == "float64"
    assert scalar.description == "A Python float (3.14), passed as a scalar, not a tensor."


def test_level2_chained_and_unpacked_constants():
    chained = read_problem(problem(REVISED, "level2/10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh.py"))
    assert chained.constants["height"] == chained.constants["width"] == 256  # height = width = 256
    unpacked = read_problem(problem(FIRST, "level2/100_ConvTranspose3d_Clamp_Min_Divide.py"))
    # depth, height, width = 16, 32, 32; min_value = -1.0; bias_shape-like tuples are not axes
    assert {k: unpacked.constants[k] for k in ("depth", "height", "width", "min_value")} == {
        "depth": 16,
        "height": 32,
        "width": 32,
        "min_value": -1.0,
    }
    assert unpacked.inputs == {"x": TensorSpec(dtype="float32", shape=[16, 32, 16, 32, 32])}


def test_level3_architecture_list_constant_is_not_an_axis():
    facts = read_problem(problem(FIRST, "level3/10_ResNet101.py"))
    assert facts.constants == {"batch_size": 10, "height": 224, "width": 224, "num_classes": 1000}
    assert facts.inputs == {"x": TensorSpec(dtype="float32", shape=[10, 3, 224, 224])}
    assert facts.description is None  # its Model has no docstring, nor the module


def test_level4_token_ids_and_origin_model():
    facts = read_problem(problem(BABEL, "level4/2_facebook-opt-1p3b_bs1_seq2047.py"))
    # vocab_size = config.vocab_size is read from a downloaded config: not a constant.
    assert facts.constants == {"sequence_length": 2047, "batch_size": 1}
    assert facts.inputs == {"x": TensorSpec(dtype="int64", shape=[1, 2047])}
    assert facts.model_name == "facebook/opt-1.3b"
    assert facts.description is None


def test_every_bundled_problem_file_is_read_and_its_inputs_understood():
    seen: dict[bytes, Path] = {}
    for path in sorted(FILES.glob("*/KernelBench/*/*.py")):
        seen.setdefault(path.read_bytes(), path)
    assert len(seen) == 521
    not_understood = {
        str(path.relative_to(FILES)): name
        for path in seen.values()
        for name, tensor in read_problem(path.read_text()).inputs.items()
        if tensor.dtype == "unknown" or (tensor.shape is None and not tensor.description)
    }
    assert not_understood == {}


SOURCE_NOT_UNDERSTOOD = """
import torch

class Model(torch.nn.Module):
    def forward(self, a, b, c, d):
        return a

n = 10 ** 10 ** 10
size = 4
huge = 2 ** 70
open("written-if-executed", "w")

def get_inputs():
    for i in range(3):
        size = size + i
    a = torch.randn(size, 8)
    b = torch.tensor([1, 2, 3])
    c = torch.randn(4, 4, dtype=torch.some_new_type)
    return [a, b, c, torch.randn(2) @ torch.randn(2)]
"""


def test_what_is_not_understood_is_quoted_never_guessed_and_nothing_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    facts = read_problem(SOURCE_NOT_UNDERSTOOD)
    assert not (tmp_path / "written-if-executed").exists()
    # 10 ** 10 ** 10 is refused, not computed; 2 ** 70 is past any size.
    assert facts.constants == {"size": 4}
    assert facts.inputs == {
        "a": TensorSpec(
            dtype="unknown",
            description="Not read from the reference program: `a = torch.randn(size, 8)`.",
        ),
        "b": TensorSpec(
            dtype="unknown",
            description="Not read from the reference program: `b = torch.tensor([1, 2, 3])`.",
        ),
        "c": TensorSpec(
            dtype="unknown",
            description="Not read from the reference program: `c = torch.randn(4, 4, dtype=torch.some_new_type)`.",
        ),
        "d": TensorSpec(
            dtype="unknown",
            description="Not read from the reference program: `torch.randn(2) @ torch.randn(2)`.",
        ),
    }


def test_a_file_that_is_not_python_is_refused():
    with pytest.raises(ProblemNotReadable):
        read_problem("def get_inputs(:\n")
    with pytest.raises(ProblemNotReadable):
        read_problem("x = 1\x00\n")
    with pytest.raises(ProblemNotReadable, match="nested too deeply"):
        read_problem("x = 1" + " + 1" * 500 + "\n")


def test_no_get_inputs_means_no_inputs_and_docstring_falls_back_to_the_module():
    facts = read_problem('"""Module text."""\nimport torch\nK = 3\n')
    assert facts.description == "Module text."
    assert facts.constants == {"K": 3}
    assert facts.inputs == {}
