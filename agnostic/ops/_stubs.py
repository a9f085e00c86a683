"""The typing stub of the Tensor methods the op declarations make (``agnostic/_tensor_methods.pyi``): what type
checkers and IDEs read for ``agnostic.Tensor``'s ops, whose class is made at import time.

    python -m agnostic.ops._stubs  # writes the stub again after adding or changing an op

``tests/test_typing.py`` checks that the stub is current.
"""

import inspect
import pathlib

from ._registry import tensor_methods

STUB = pathlib.Path(__file__).resolve().parent.parent / "_tensor_methods.pyi"

_HEADER = '''"""Signatures of the Tensor methods the op declarations make. Generated from the declarations by
``python -m agnostic.ops._stubs``: don't edit by hand."""

'''


def stub_text():
    """The stub's text, from the declarations of the imported package."""
    lines = [_HEADER, "class TensorMethods:"]
    for name, method in sorted(tensor_methods().items()):
        if isinstance(method, property):
            lines += ["    @property", f"    def {name}(self): ..."]
        else:
            lines.append(f"    def {name}({_parameters(method)}): ...")
    lines += ["", "", "class GradTensorMethods:", '    """The recording forms of the same methods."""', ""]
    return "\n".join(lines)


def _parameters(function):
    """``function``'s parameters as a stub writes them: names, ``/`` and ``*``, defaults as ``...``."""
    parts, keyword_only_started = [], False
    parameters = list(inspect.signature(function).parameters.values())
    for index, parameter in enumerate(parameters):
        if parameter.kind is parameter.KEYWORD_ONLY and not keyword_only_started:
            parts.append("*")
        if parameter.kind in (parameter.KEYWORD_ONLY, parameter.VAR_POSITIONAL):
            keyword_only_started = True
        prefix = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        parts.append(prefix + parameter.name + ("=..." if parameter.default is not parameter.empty else ""))
        following = parameters[index + 1] if index + 1 < len(parameters) else None
        if parameter.kind is parameter.POSITIONAL_ONLY and (following is None
                                                            or following.kind is not parameter.POSITIONAL_ONLY):
            parts.append("/")
    return ", ".join(parts)


def main():
    import agnostic  # noqa: F401  (every op declared)

    STUB.write_text(stub_text())
    print(f"wrote {STUB}")


if __name__ == "__main__":
    main()
