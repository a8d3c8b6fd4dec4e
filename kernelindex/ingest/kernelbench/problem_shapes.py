"""What a KernelBench problem file declares, read with ``ast`` and never executed.

A problem file is a Python program: a ``Model(nn.Module)``, module-level constants that fix
the sizes, and ``get_inputs()`` returning the list of tensors ``Model.forward`` is called
with. Running it would import torch and, for level 4, download a model; reading it only needs
the syntax tree. What this reader understands:

- constants: literals and simple arithmetic over earlier constants (``M = 1024 * 2``,
  ``height = width = 128``, ``depth, height, width = 16, 32, 32``);
- inputs: ``torch.randn/rand/zeros/ones/empty/randint(...)`` with sizes from integers,
  constants and tuples (``*input_shape`` too), a ``dtype=`` keyword, and the shape- and
  dtype-keeping steps the problems apply to them (``.float()``, ``.softmax(dim=-1)``,
  ``torch.tril(A)``, ``(A + A.T) / 2``, ``x * 2 - 1``, ``randint(0, 2, x.shape)``).

Anything else is reported as not understood (dtype ``unknown``, with the expression quoted),
never guessed.

The file is untrusted: reading it is linear in its size (an expression is quoted only when it
is shown, and once; sequences are capped, so ``a = (*a, *a)`` cannot double without end), a
file over ``MAX_SOURCE_CHARS`` is refused, and the reading stops after ``READ_SECONDS``.
"""

from __future__ import annotations

import ast
import math
import time
from dataclasses import dataclass, field
from typing import TypeAlias

# Integers past this are not sizes (and a hostile ``10 ** 10 ** 10`` must not be computed).
MAX_MAGNITUDE = 2**63
MAX_EXPONENT = 64
QUOTE_LIMIT = 200
# Bounds on reading one file: its size, the elements of one sequence, the time it may take.
MAX_SOURCE_CHARS = 200_000
MAX_ELEMENTS = 4_096
READ_SECONDS = 5.0

DTYPES = {
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "float64": "float64",
    "double": "float64",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "short": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "bool": "bool",
    "complex64": "complex64",
    "complex128": "complex128",
}
FLOATING = {"float16", "bfloat16", "float32", "float64", "complex64", "complex128"}
# torch.<factory>(*sizes, dtype=...) and its default dtype.
SIZED_FACTORIES = {"randn": "float32", "rand": "float32", "zeros": "float32", "ones": "float32", "empty": "float32"}
# torch.<function>(tensor, ...) and tensor.<method>(...) that keep the shape and the dtype.
SHAPE_KEEPING = {
    "abs",
    "clamp",
    "clone",
    "contiguous",
    "cuda",
    "detach",
    "exp",
    "log_softmax",
    "neg",
    "relu",
    "sigmoid",
    "softmax",
    "sqrt",
    "tanh",
    "tril",
    "triu",
}
# tensor.<method>() that keep the shape and set the dtype.
CASTS = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16", "long": "int64"}
CASTS |= {"int": "int32", "bool": "bool"}


@dataclass(frozen=True)
class TensorSpec:
    """One input as the reference program builds it; ``shape`` is ``None`` for a scalar or an
    input whose shape was not understood (then ``description`` says so)."""

    dtype: str
    shape: list[int] | None = None
    description: str | None = None


@dataclass(frozen=True)
class ProblemFacts:
    description: str | None
    constants: dict[str, int | float] = field(default_factory=dict)
    inputs: dict[str, TensorSpec] = field(default_factory=dict)
    model_name: str | None = None


class ProblemNotReadable(ValueError):
    """The file is not Python this interpreter can parse."""


# --- Values ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tensor:
    dtype: str
    shape: tuple[int, ...] | None


class _Unknown:
    """A value not understood, with the expression that made it (quoted to the reader). The
    quote is made when it is first shown, and once: quoting every enclosing expression of a
    long chain as it is read made reading quadratic (a 4 KB file took seconds)."""

    __slots__ = ("_node", "_prefix", "_source", "_suffix", "_text")

    def __init__(self, node: ast.AST, source: _Source, prefix: str = "", suffix: str = ""):
        self._node, self._source, self._prefix, self._suffix = node, source, prefix, suffix
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = f"{self._prefix}{_quote(self._node, self._source)}{self._suffix}"
        return self._text


Value: TypeAlias = int | float | str | bool | tuple["Value", ...] | _Tensor | _Unknown


# Expressions of more nodes than this are quoted from the file's text, not ``ast.unparse`` (which
# takes time growing faster than their size, for a quote of QUOTE_LIMIT characters).
UNPARSE_NODES = 200


class _Source:
    """The file's text and where each line starts, to quote a long expression as written."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for line in text.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def segment(self, node: ast.AST) -> str:
        line, column = getattr(node, "lineno", None), getattr(node, "col_offset", None)
        if line is None or column is None or line > len(self.starts):
            return ""
        # Column offsets count UTF-8 bytes; the slice is at most a few characters off, for a quote.
        start = self.starts[line - 1] + column
        return " ".join(self.text[start : start + 4 * QUOTE_LIMIT].split())


def _quote(node: ast.AST, source: _Source | None = None) -> str:
    walked = 0
    for walked, _ in enumerate(ast.walk(node), start=1):
        if walked > UNPARSE_NODES:
            break
    text = source.segment(node) if source is not None and walked > UNPARSE_NODES else ast.unparse(node)
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: float) -> int | float | None:
    """``value`` if it is a sensible size or constant, else ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) and abs(value) < MAX_MAGNITUDE else None
    return value if abs(value) <= MAX_MAGNITUDE else None


def _arithmetic(op: ast.operator, left: float, right: float) -> int | float | None:
    try:
        match op:
            case ast.Add():
                return _number(left + right)
            case ast.Sub():
                return _number(left - right)
            case ast.Mult():
                return _number(left * right)
            case ast.Div():
                return _number(left / right)
            case ast.FloorDiv():
                return _number(left // right)
            case ast.Mod():
                return _number(left % right)
            case ast.Pow() if isinstance(right, int) and 0 <= right <= MAX_EXPONENT:
                return _number(left**right)
    except (ZeroDivisionError, OverflowError):
        return None
    return None


def _broadcast(left: tuple[int, ...] | None, right: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The broadcast shape of two tensors, or ``None`` if unknown or incompatible."""
    if left is None or right is None:
        return None
    width = max(len(left), len(right))
    padded_left, padded_right = (1,) * (width - len(left)) + left, (1,) * (width - len(right)) + right
    shape = []
    for a, b in zip(padded_left, padded_right, strict=True):
        if a != b and 1 not in (a, b):
            return None
        shape.append(max(a, b) if 1 in (a, b) else a)
    return tuple(shape)


def _promote(tensor: str, other: object, op: ast.operator) -> str:
    """The dtype of ``tensor <op> other`` (a Python number or a dtype), as torch promotes it."""
    integral = tensor not in FLOATING and tensor != "unknown"
    if isinstance(other, str):
        if other == tensor:
            return tensor
        if integral and other in FLOATING:
            return other
        return tensor if other not in FLOATING and not integral else "unknown"
    if integral and (isinstance(op, ast.Div) or isinstance(other, float)):
        return "float32"
    return tensor


# --- The evaluator -------------------------------------------------------------------


class _TooSlow(Exception):
    pass


class _Scope:
    """Names bound so far: the module's constants, then a function's locals on top. Reading
    stops with ``_TooSlow`` once the monotonic clock passes ``deadline``."""

    def __init__(self, source: _Source, deadline: float, outer: dict[str, Value] | None = None):
        self.source = source
        self.deadline = deadline
        self.outer = outer or {}
        self.names: dict[str, Value] = {}

    def lookup(self, name: str) -> Value | None:
        return self.names.get(name, self.outer.get(name))

    def value(self, node: ast.expr) -> Value:
        if time.monotonic() > self.deadline:
            raise _TooSlow
        result = self._value(node)
        return _Unknown(node, self.source) if result is None else result

    def _value(self, node: ast.expr) -> Value | None:
        match node:
            case ast.Constant(value=value) if isinstance(value, int | float | str | bool):
                return value if isinstance(value, str | bool) else _number(value)
            case ast.Name(id=name):
                return self.lookup(name)
            case ast.Tuple(elts=elements) | ast.List(elts=elements):
                return self._sequence(elements)
            case ast.UnaryOp(op=ast.USub() | ast.UAdd() as op, operand=operand):
                inner = self.value(operand)
                if isinstance(inner, int | float) and not isinstance(inner, bool):
                    return _number(-inner if isinstance(op, ast.USub) else inner)
                return inner if isinstance(inner, _Tensor) else None
            case ast.BinOp(left=left, op=op, right=right):
                return self._binary(self.value(left), op, self.value(right))
            case ast.Attribute(value=inner, attr="T" | "shape" as attribute):
                tensor = self.value(inner)
                if not isinstance(tensor, _Tensor) or tensor.shape is None:
                    return None
                return _Tensor(tensor.dtype, tensor.shape[::-1]) if attribute == "T" else tensor.shape
            case ast.Call():
                return self._call(node)
        return None

    def _sequence(self, elements: list[ast.expr]) -> tuple[Value, ...] | None:
        values: list[Value] = []
        for element in elements:
            if isinstance(element, ast.Starred):
                inner = self.value(element.value)
                if not isinstance(inner, tuple):
                    return None
                values.extend(inner)
            else:
                values.append(self.value(element))
            if len(values) > MAX_ELEMENTS:
                return None
        return tuple(values)

    def _binary(self, left: Value, op: ast.operator, right: Value) -> Value | None:
        if _is_number(left) and _is_number(right):
            assert isinstance(left, int | float) and isinstance(right, int | float)
            return _arithmetic(op, left, right)
        if isinstance(op, ast.MatMult):
            return None
        if isinstance(left, _Tensor) and isinstance(right, _Tensor):
            return _Tensor(_promote(left.dtype, right.dtype, op), _broadcast(left.shape, right.shape))
        if isinstance(left, _Tensor) and _is_number(right):
            return _Tensor(_promote(left.dtype, right, op), left.shape)
        if isinstance(right, _Tensor) and _is_number(left):
            return _Tensor(_promote(right.dtype, left, op), right.shape)
        return None

    def _dtype(self, node: ast.expr) -> str | None:
        """``torch.float16`` (or a name bound to it) → ``"float16"``."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            return DTYPES.get(node.attr)
        return None

    def _sizes(self, args: list[ast.expr]) -> tuple[int, ...] | None:
        """``randn(2, 3)``, ``randn((2, 3))``, ``randn(batch, *shape)``: the sizes, or ``None``."""
        values = self._sequence(args)
        if values is not None and len(values) == 1 and isinstance(values[0], tuple):
            values = values[0]
        if values is None:
            return None
        sizes = tuple(v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 0)
        return sizes if len(sizes) == len(values) else None

    def _call(self, node: ast.Call) -> Value | None:
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        if len(keywords) != len(node.keywords):
            return None  # **kwargs: not understood
        func = node.func
        if not isinstance(func, ast.Attribute):
            return None
        if isinstance(func.value, ast.Name) and func.value.id == "torch":
            return self._torch_call(func.attr, node.args, keywords)
        receiver = self.value(func.value)
        if not isinstance(receiver, _Tensor):
            return None
        if func.attr in CASTS and not node.args and not keywords:
            return _Tensor(CASTS[func.attr], receiver.shape)
        if func.attr == "to":
            targets = [self._dtype(arg) for arg in [*node.args, *keywords.values()]]
            dtypes = [dtype for dtype in targets if dtype is not None]
            return _Tensor(dtypes[-1] if dtypes else receiver.dtype, receiver.shape)
        if func.attr in SHAPE_KEEPING:
            return receiver
        return None

    def _torch_call(self, name: str, args: list[ast.expr], keywords: dict[str, ast.expr]) -> Value | None:
        dtype = self._dtype(keywords["dtype"]) if "dtype" in keywords else None
        if "dtype" in keywords and dtype is None:
            return None
        if name in SIZED_FACTORIES:
            sizes = self._sizes([keywords["size"]] if "size" in keywords else args)
            return None if sizes is None else _Tensor(dtype or SIZED_FACTORIES[name], sizes)
        if name == "randint":
            # randint(high, size) or randint(low, high, size); the size may also be a keyword.
            size = keywords.get("size") or (args[-1] if len(args) in (2, 3) else None)
            sizes = self._sizes([size]) if size is not None else None
            return None if sizes is None else _Tensor(dtype or "int64", sizes)
        if name in SHAPE_KEEPING and args:
            tensor = self.value(args[0])
            return tensor if isinstance(tensor, _Tensor) else None
        return None

    def assign(self, statement: ast.stmt) -> None:
        """Bind the names an assignment sets; any other statement leaves the names it sets unknown."""
        match statement:
            case ast.Assign(targets=targets, value=expression):
                result = self.value(expression)
                for target in targets:
                    self._bind(target, expression, result)
            case ast.AnnAssign(target=target, value=expression) if expression is not None:
                self._bind(target, expression, self.value(expression))
            case ast.AugAssign(target=ast.Name(id=name) as target, op=op, value=expression):
                current = self.lookup(name)
                changed = self._binary(current, op, self.value(expression)) if current is not None else None
                self._bind(target, statement, _Unknown(statement, self.source) if changed is None else changed)
            case _:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        self.names[node.id] = _Unknown(statement, self.source, f"{node.id} (set by `", "`)")

    def _bind(self, target: ast.expr, source: ast.AST, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = (
                _Unknown(source, self.source, f"{target.id} = ") if isinstance(value, _Unknown) else value
            )
        elif isinstance(target, ast.Tuple | ast.List):
            parts = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for position, element in enumerate(target.elts):
                if parts is None:
                    self._bind(element, source, _Unknown(source, self.source))
                else:
                    self._bind(element, source, parts[position])


# --- The reader ------------------------------------------------------------------------


def _top_level(tree: ast.Module, kind: type[ast.FunctionDef] | type[ast.ClassDef], name: str) -> ast.AST | None:
    found = [node for node in tree.body if isinstance(node, kind) and node.name == name]
    return found[-1] if found else None


def _forward_parameters(model: ast.AST | None) -> list[str] | None:
    """The names ``Model.forward`` takes after ``self``; ``None`` if it takes ``*args``."""
    if not isinstance(model, ast.ClassDef):
        return None
    forward = next((n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None or forward.args.vararg is not None:
        return None
    return [arg.arg for arg in [*forward.args.posonlyargs, *forward.args.args][1:]]


def _spec(value: Value, text: str) -> TensorSpec:
    if isinstance(value, _Tensor):
        shape = None if value.shape is None else list(value.shape)
        missing = [
            part for part, known in (("dtype", value.dtype != "unknown"), ("shape", shape is not None)) if not known
        ]
        if not missing:
            return TensorSpec(dtype=value.dtype, shape=shape)
        return TensorSpec(
            dtype=value.dtype, shape=shape, description=f"Built by `{text}`; its {' and '.join(missing)} was not read."
        )
    if isinstance(value, bool):
        return TensorSpec(dtype="bool", description=f"A Python bool ({value}), passed as it is.")
    if isinstance(value, int | float):
        kind = "float" if isinstance(value, float) else "int"
        return TensorSpec(
            dtype="float64" if kind == "float" else "int64",
            description=f"A Python {kind} ({value}), passed as a scalar, not a tensor.",
        )
    quoted = value.text if isinstance(value, _Unknown) else text  # a string or a nested list
    return TensorSpec(dtype="unknown", description=f"Not read from the reference program: `{quoted}`.")


def _inputs(get_inputs: ast.AST | None, module: _Scope, parameters: list[str] | None) -> dict[str, TensorSpec]:
    if not isinstance(get_inputs, ast.FunctionDef):
        return {}
    scope = _Scope(module.source, module.deadline, module.names)
    returned: ast.expr | None = None
    for statement in get_inputs.body:
        if isinstance(statement, ast.Return):
            returned = statement.value
            break
        scope.assign(statement)
    if returned is None:
        return {}
    value = scope.value(returned)
    if not isinstance(value, tuple):
        return {"inputs": _spec(value, _quote(returned, scope.source))}
    elements = returned.elts if isinstance(returned, ast.List | ast.Tuple) else []
    texts = (
        [_quote(e, scope.source) for e in elements]
        if len(elements) == len(value)
        else [_quote(returned, scope.source)] * len(value)
    )
    if parameters is not None and len(parameters) == len(value):
        names = parameters
    else:
        names = [e.id if isinstance(e, ast.Name) else f"input{i}" for i, e in enumerate(elements)]
        names = names if len(names) == len(value) else [f"input{i}" for i in range(len(value))]
    inputs: dict[str, TensorSpec] = {}
    for name, item, text in zip(names, value, texts, strict=True):
        key = name if name not in inputs else f"{name}_{len(inputs)}"
        inputs[key] = _spec(item, text)
    return inputs


def read_problem(source: str, seconds: float = READ_SECONDS) -> ProblemFacts:
    """Read a problem file's docstring, constants and inputs; ``ProblemNotReadable`` if it is not
    Python, is longer than ``MAX_SOURCE_CHARS`` or takes more than ``seconds`` to read."""
    if len(source) > MAX_SOURCE_CHARS:
        raise ProblemNotReadable(f"too large to read: longer than {MAX_SOURCE_CHARS} characters")
    deadline = time.monotonic() + seconds
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ProblemNotReadable(f"not Python this reader can parse ({type(exc).__name__})") from None
    try:
        return _read(tree, _Source(source), deadline)
    except RecursionError:
        # Python parses expressions nested deeper than this reader (or ast.unparse) can walk.
        raise ProblemNotReadable("expressions nested too deeply to read") from None
    except _TooSlow:
        raise ProblemNotReadable(f"not read within {seconds:g} s (its expressions are too many or too long)") from None


def _read(tree: ast.Module, source: _Source, deadline: float) -> ProblemFacts:
    module = _Scope(source, deadline)
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            module.assign(statement)
    model = _top_level(tree, ast.ClassDef, "Model")
    description = (ast.get_docstring(model) if isinstance(model, ast.ClassDef) else None) or ast.get_docstring(tree)
    constants = {
        name: value
        for name, value in module.names.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    model_name = module.names.get("model_name")
    return ProblemFacts(
        description=description,
        constants=constants,
        inputs=_inputs(_top_level(tree, ast.FunctionDef, "get_inputs"), module, _forward_parameters(model)),
        model_name=model_name if isinstance(model_name, str) else None,
    )
