"""The docstrings of the methods and operators made from a declaration (``Tensor.sub_``, ``__sub__``...).

Each shows the op's own first example rewritten for it: where ``sub``'s docstring shows
``agnostic.sub(agnostic.tensor([5.0, 7.0]), 2)`` and its result, ``Tensor.sub_`` shows ``x.sub_(2)`` on
``x = agnostic.tensor([5.0, 7.0])``, ``__sub__`` shows ``agnostic.tensor([5.0, 7.0]) - 2`` and ``__rsub__`` the
same subtraction with a NumPy array on the left. The result printed is the example's (nothing is computed here),
adjusted where ``self`` keeping its dtype changes it. So an op's first example is one call of it, without keywords
where it has an operator; ``tests/test_api_reference.py`` runs them all.
"""

import ast
import functools
import itertools

from ._dispatch import Result

_BINARY_SYNTAX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                  "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "eq": "==",
                  "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


_UNARY_SYNTAX = {"neg": "-{}", "invert": "~{}", "abs": "abs({})"}


def inplace_doc(op, name):
    """``Tensor.<name>``'s docstring, for the in-place form of ``op``."""
    result = getattr(op, "result", None)
    augmented = result in (Result.SAME, Result.FLOAT) and op.operator in _BINARY_SYNTAX  # ``__isub__`` is ``sub_``
    doc = f"In-place :func:`{op.name}`" + (f" (``self {_BINARY_SYNTAX[op.operator]}= other``)" if augmented else "") \
        + ": the result is written into ``self``, which keeps its shape and dtype."
    example = _example(op)
    if example is None:
        return doc
    (first, *rest), keywords, printed = example
    if result == Result.FLOAT:
        first = _as_floats(first)  # ``self`` must hold a floating result
    elif result in (Result.BOOL, Result.LOGICAL):
        printed = _bools_as_integers(printed)  # the truth values in the integer ``self``
    return doc + _example_text([f"x = {first}", f"x.{name}({', '.join(rest + keywords)})"], printed)


def operator_doc(op, reflected, numbers=True):
    """``Tensor.__<operator>__``'s docstring (``__r<operator>__``'s when ``reflected``), for ``op``."""
    if op.operator in _UNARY_SYNTAX:
        doc = f"``{_syntax(op.operator, 'self')}``: :func:`{op.name}`."
    elif reflected:
        other = "a Python number or a NumPy or CuPy array" if numbers else "a NumPy or CuPy array"
        doc = (f"``{_syntax(op.operator, 'other', 'self')}``, for an ``other`` that is {other} (made a tensor): "
               f":func:`{op.name}` with the operands swapped.")
    else:
        doc = f"``{_syntax(op.operator, 'self', 'other')}``: :func:`{op.name}`."
    example = _example(op)
    if example is None or example[1]:  # operators take no keywords
        return doc
    operands, _, printed = example
    if reflected:  # the same operation, with the left operand an array, so that Python calls ``__r<operator>__``
        first, second = operands
        operands = [f"{first}.numpy()", second if "agnostic." in second else f"agnostic.tensor({second})"]
    return doc + _example_text([_syntax(op.operator, *operands)], printed)


def _syntax(operator, *operands):
    """Python's syntax for ``__<operator>__`` on these operands' sources: ``self - other``, ``-self``."""
    if operator in _UNARY_SYNTAX:
        return _UNARY_SYNTAX[operator].format(*operands)
    return f"{operands[0]} {_BINARY_SYNTAX[operator]} {operands[1]}"


@functools.cache  # an op's in-place method and its operators all read it
def _example(op):
    """The first example in ``op``'s docstring, as (its operands' sources, its keyword arguments' sources, the lines
    it prints); ``agnostic.sub(x, 2)``, ``x.sub(2)`` and ``x - 2`` all give ``(["x", "2"], [], ["tensor(...)"])``.
    None when that example is not a call or an operator, or is skipped."""
    lines = (op.doc or "").splitlines()
    index = next((index for index, line in enumerate(lines) if line.lstrip().startswith(">>> ")), None)
    if index is None or "doctest:" in lines[index]:
        return None
    code = lines[index].lstrip()[4:]
    try:
        expression = ast.parse(code, mode="eval").body
    except SyntaxError:  # a statement (``x = ...``)
        return None
    keywords = []
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
        function = expression.func.value
        module = isinstance(function, ast.Name) and function.id == "agnostic"
        operands = expression.args if module else [function, *expression.args]
        keywords = expression.keywords
    elif isinstance(expression, ast.BinOp):
        operands = [expression.left, expression.right]
    elif isinstance(expression, ast.UnaryOp):
        operands = [expression.operand]
    else:
        return None
    indent = len(lines[index]) - len(lines[index].lstrip())
    printed = [line[indent:] for line in itertools.takewhile(_is_printed, lines[index + 1:])]
    return [code[node.col_offset:node.end_col_offset] for node in operands], \
        [code[node.col_offset:node.end_col_offset] for node in keywords], printed  # one line of ASCII: offsets index it


def _is_printed(line):
    return line.strip() and not line.lstrip().startswith(">>>")


def _example_text(sources, printed):
    return "\n\n" + "\n".join([f"    >>> {source}" for source in sources] + [f"    {line}" for line in printed]) + "\n"


def _as_floats(source):
    """``agnostic.tensor([7, -7])`` as ``agnostic.tensor([7.0, -7.0])``."""
    tree = ast.parse(source, mode="eval")
    integers = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and type(node.value) is int]
    for node in integers:
        node.value = float(node.value)
    return ast.unparse(tree) if integers else source


def _bools_as_integers(printed):
    """A printed 1-D bool tensor as the integer tensor of its truth values (``tensor([0, 1, 0])``): the examples of
    comparisons and logical ops take integer tensors."""
    items = printed[0][printed[0].index("[") + 1:printed[0].rindex("]")].split(",")
    return ["tensor([" + ", ".join("1" if item.strip() == "True" else "0" for item in items) + "])"]
