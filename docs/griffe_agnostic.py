"""Griffe extension for agnostic's API reference (named in ``mkdocs.yml``; not part of the package).

agnostic makes much of its API at import time (ops and Tensor's methods from their declarations), so the reference
inspects the imported package. Inspection alone gets four things wrong, fixed here:

- ``agnostic.__all__`` is computed at import time (every public name, the declared ops among them), which static
  analysis can't read; the running package's is used.
- A class attribute made elsewhere (``Tensor.add`` comes from the op registry) becomes an alias to the function it
  was made from, showing that function's signature and docstring, or nothing when the maker is a closure. Class
  members (but classes and modules held by a class) are inspected as they are on the class.
- An exported name whose home griffe can't load (``agnostic.ops`` is a namespace package; the legacy tensor types
  are made by code) would be an alias to nothing and vanish; so would a function exported under the name of its
  own submodule (``agnostic.autograd.gradcheck``). They are inspected where they are exported, as users see them.
- Public class attributes, and module attributes listed in ``__all__``, whose value is ``None`` are dropped by
  inspection; they are added back (``agnostic.array_api.newaxis``).

It also shows each docstring's ``>>>`` examples as highlighted code blocks (Markdown would read a one-line docstring's
example, dedented to the margin, as a quotation), without their ``# doctest:`` directives; and an instance that has
only its class's docstring (``agnostic.float32``) points to its class instead of repeating it.
"""

import importlib
import inspect
import re

import griffe


_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


class AgnosticPublicNames(griffe.Extension):
    """Document agnostic's public names as the running package has them."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fenced_examples(obj.docstring.value)

    def on_attribute_instance(self, *, node, attr, **kwargs):
        kind = type(node.obj)
        if kind.__module__.startswith("agnostic") and kind.__doc__ and node.obj.__doc__ is kind.__doc__:
            public = importlib.import_module("agnostic")
            path = f"agnostic.{kind.__name__}" if getattr(public, kind.__name__, None) is kind else \
                f"{kind.__module__}.{kind.__qualname__}"
            attr.docstring = griffe.Docstring(f"An instance of [`{path}`][{path}]: see there.", parent=attr)

    def on_class_members(self, *, node, cls, agent, **kwargs):
        if not isinstance(agent, griffe.Inspector):
            return
        for name, value in vars(node.obj).items():
            member = cls.members.get(name)
            if member is not None and member.is_alias and not (inspect.isclass(value) or inspect.ismodule(value)):
                del cls.members[name]
                agent.inspect(griffe.ObjectNode(value, name, parent=node))
            elif member is None and value is None and not name.startswith("_"):
                cls.set_member(name, griffe.Attribute(name, value="None", parent=cls))

    def on_module_members(self, *, node, mod, agent, **kwargs):
        if not isinstance(agent, griffe.Inspector):
            return
        for name in getattr(node.obj, "__all__", ()):
            if name not in mod.members and getattr(node.obj, name, ...) is None:
                mod.set_member(name, griffe.Attribute(name, value="None", parent=mod))

    def on_package(self, *, pkg, loader, **kwargs):
        if pkg.path != "agnostic":
            return
        runtime = importlib.import_module("agnostic")
        pkg.exports = list(runtime.__all__)
        modules = list(_modules(pkg))
        for module in modules:
            _inspect_shadowing_exports(module, loader)
        for module in modules:
            _inspect_unresolvable_aliases(module, loader)


def _modules(module):
    yield module
    for submodule in list(module.modules.values()):
        if not submodule.is_alias:
            yield from _modules(submodule)


def _exports(module):
    return {str(name) for name in module.exports or ()}


def _inspector(module, loader):
    inspector = griffe.Inspector(
        module.path, None, loader.extensions, docstring_parser=loader.docstring_parser,
        docstring_options=loader.docstring_options, lines_collection=loader.lines_collection,
        modules_collection=loader.modules_collection,
    )
    inspector.current = module
    return inspector


def _inspect_runtime_member(module, name, loader):
    """Replace ``module``'s member ``name`` by an inspection of the object the imported module holds there."""
    runtime = importlib.import_module(module.path)
    del module.members[name]
    node = griffe.ObjectNode(getattr(runtime, name), name, parent=griffe.ObjectNode(runtime, module.name))
    _inspector(module, loader).inspect(node)


def _inspect_shadowing_exports(module, loader):
    """An exported function named as its own submodule (``from .gradcheck import gradcheck``) replaces it."""
    runtime = importlib.import_module(module.path)
    for name in _exports(module):
        member = module.members.get(name)
        if member is not None and not member.is_alias and member.is_module:
            if not inspect.ismodule(getattr(runtime, name, None)):
                _inspect_runtime_member(module, name, loader)


def _inspect_unresolvable_aliases(module, loader):
    """Replace the exported aliases of ``module`` that point nowhere by an inspection of the runtime object."""
    runtime = importlib.import_module(module.path)
    for name in _exports(module):
        member = module.members.get(name)
        if member is None or not member.is_alias or inspect.ismodule(getattr(runtime, name, None)):
            continue
        try:
            member.final_target
        except griffe.AliasResolutionError:
            _inspect_runtime_member(module, name, loader)


def fenced_examples(text):
    """``text`` with each run of doctest lines (a ``>>>`` line to the next blank line) in a ``pycon`` code fence."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        if not lines[i].lstrip().startswith(">>>"):
            out.append(lines[i])
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        block = []
        while i < len(lines) and lines[i].strip():
            line = lines[i]
            block.append(_DIRECTIVE.sub("", line[indent:] if not line[:indent].strip() else line.lstrip()))
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += ["```pycon", *block, "```"]
    return "\n".join(out)
