"""Generates `tpu_estimator_compat/cli/tf115_inventory.json.gz`: TensorFlow 1.15's API as
ground truth, read statically (`ast`; never imported) from the TF 1.15 wheel's sources.

    pip download --no-deps --only-binary=:all: --python-version 3.7 \\
        --platform manylinux2010_x86_64 tensorflow-cpu==1.15.0 -d /work/tf115
    pip download --no-deps --only-binary=:all: --python-version 3.7 \\
        tensorflow-estimator==1.15.1 -d /work/tf115
    python tools/tf1_inventory.py /work/tf115/tensorflow_cpu-1.15.0-*.whl \\
        /work/tf115/tensorflow_estimator-1.15.1-*.whl

Output: `{"modules": {module path: {kind: [public names]}}}`, one entry for every
`tensorflow.*` and `tensorflow_estimator.*` module path a program can import (test modules left out), each with the public names that
attribute access on it yields, by kind: `m` module, `c` class, `f` function, `o` other (a
value, or a call's result), `?` unknown (from a compiled module). How each module's names are
found, statement by statement in its top-level code (branches of `if`/`try` included):
imports (a submodule imported by its package becomes the package's attribute, as the import
system does, before the names imported from it), star imports (`__all__` when the module
lists it literally, else its public names), `def`/`class`/assignments (aliases followed;
`namedtuple(...)` a class, `LazyLoader(..., 'tensorflow.x')` a module), `del`, and
`remove_undocumented(__name__, allowed)` (public names neither `@@name` in the docstring nor
allowed are removed). `tensorflow_core` is `tensorflow`; `tensorflow.X` is also looked up in
`_api/v1/X` (the generated API, on TF 1.15's `tensorflow.__path__`) and `tensorflow.keras.X`
in `python/keras/api/_v1/keras/X`. From the tensorflow-estimator 1.15.1 wheel:
`tensorflow_estimator.*`, and `tensorflow.estimator.X` from its
`python/estimator/api/_v1/estimator/X` (first on TF 1.15's `tensorflow.__path__`).
"""
import ast
import gzip
import json
import re
import sys
import zipfile

_CORE = "tensorflow_core/"
_API_DIRS = (("tensorflow", "_api/v1/"), ("tensorflow.keras", "python/keras/api/_v1/keras/"))
_ESTIMATOR = "tensorflow_estimator/"
_ESTIMATOR_API = "tensorflow_estimator/python/estimator/api/_v1/estimator/"
_DOC_NAME = re.compile(r"^@@([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
OUTPUT = "tpu_estimator_compat/cli/tf115_inventory.json.gz"


def _is_test(path):
    parts = path.split("/")
    return parts[-1].endswith("_test.py") or "kernel_tests" in parts


def _module(relative):
    """(dotted parts, is_package) of a source path relative to its package directory."""
    is_package = relative.endswith("__init__") or relative == "__init__"
    return [p for p in relative.split("/") if p != "__init__"], is_package


def index_estimator(wheel):
    """`{module name: (source, is_package)}` of the estimator wheel: `tensorflow_estimator.*`
    and the `tensorflow.estimator.*` it serves."""
    sources = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            if not (path.startswith(_ESTIMATOR) and path.endswith(".py")) or _is_test(path):
                continue
            text = archive.read(path).decode("utf-8", "replace")
            parts, is_package = _module(path[:-len(".py")])
            sources[".".join(parts)] = (text, is_package)
            if path.startswith(_ESTIMATOR_API):
                below, is_package = _module(path[len(_ESTIMATOR_API):-len(".py")])
                sources[".".join(["tensorflow.estimator", *below])] = (text, is_package)
    return sources


def index_sources(wheel):
    """`{module name: (source, is_package)}` of the wheel's `tensorflow.*` modules."""
    sources = {}
    api = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            if not (path.startswith(_CORE) and path.endswith(".py")) or _is_test(path):
                continue
            relative = path[len(_CORE):-len(".py")]
            text = archive.read(path).decode("utf-8", "replace")
            is_package = relative.endswith("__init__") or relative == "__init__"
            parts = [p for p in relative.split("/") if p != "__init__"]
            sources[".".join(["tensorflow", *parts])] = (text, is_package)
            for prefix, directory in _API_DIRS:
                if relative.startswith(directory):
                    below = [p for p in relative[len(directory):].split("/") if p != "__init__"]
                    api[".".join([prefix, *below])] = (text, is_package)
    for name, value in api.items():
        sources.setdefault(name, value)
    return sources


class Inventory:
    """Evaluates module namespaces statically (see the module docstring)."""

    def __init__(self, sources):
        self.sources = sources
        self._namespaces = {}

    def namespace(self, module):
        """`{name: binding}` of `module` after its top-level code, a binding being
        `('m', module)`, `('c',)`, `('f',)`, `('o',)`, `('?',)` or `('r', module, name)`."""
        if module not in self._namespaces:
            self._namespaces[module] = {}  # what a circular import sees: partial
            if module in self.sources:
                self._namespaces[module] = _ModuleEvaluator(self, module).run()
        return self._namespaces[module]

    def is_module(self, name):
        return name in self.sources

    def resolve(self, binding, seen=()):
        """A binding's kind letter."""
        if binding[0] != "r":
            return binding[0]
        _, module, name = binding
        if (module, name) in seen or len(seen) > 50:
            return "?"
        if module.partition(".")[0] not in ("tensorflow", "tensorflow_estimator"):
            return "?"
        namespace = self.namespace(module)
        if name in namespace:
            return self.resolve(namespace[name], seen + ((module, name),))
        return "m" if self.is_module(f"{module}.{name}") else "?"

    def exported(self, module):
        """`{name: binding}` that `from module import *` binds."""
        namespace = self.namespace(module)
        names = namespace.get("__all__")
        if names is None:
            return {n: b for n, b in namespace.items() if not n.startswith("_")}
        return {n: namespace.get(n, ("r", module, n)) for n in names[1]}

    def kinds(self, module):
        """`{kind: sorted public names}` of `module`."""
        by_kind = {}
        for name, binding in self.namespace(module).items():
            if not name.startswith("_"):
                by_kind.setdefault(self.resolve(binding), []).append(name)
        return {kind: sorted(names) for kind, names in sorted(by_kind.items())}


class _ModuleEvaluator:
    def __init__(self, inventory, module):
        self.inventory = inventory
        self.module = module
        text, self.is_package = inventory.sources[module]
        self.tree = ast.parse(text)
        self.package = module if self.is_package else module.rpartition(".")[0]
        self.names = {}
        self.lists = {}  # module-level list constants (for __all__ and allowed lists)

    def run(self):
        self._block(self.tree.body)
        return self.names

    def _block(self, statements):
        for statement in statements:
            self._statement(statement)

    def _statement(self, node):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = _tf(alias.name)
                self._submodule_side_effect(name)
                if alias.asname:
                    self.names[alias.asname] = ("m", name)
                else:
                    first = name.partition(".")[0]
                    self.names[first] = ("m", first)
        elif isinstance(node, ast.ImportFrom):
            if node.module != "__future__":  # compiler directives, not API
                self._import_from(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.names[node.name] = ("f",)
        elif isinstance(node, ast.ClassDef):
            self.names[node.name] = ("c",)
        elif isinstance(node, ast.Assign):
            self._assign(node.targets, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._assign([node.target], node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            extra = self._list(node.value)
            name = node.target.id
            if extra is not None and name in self.lists:
                self._set_list(name, self.lists[name] + extra)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.names.pop(target.id, None)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._call(node.value)
        elif isinstance(node, ast.If):
            self._block(node.body)
            self._block(node.orelse)
        elif isinstance(node, ast.Try):
            self._block(node.body)
            self._block(node.orelse)
            bound = set(self.names)
            for handler in node.handlers:
                before = dict(self.names)
                self._block(handler.body)
                for name in bound:  # a handler only fills in what the body did not bind
                    if name in before:
                        self.names[name] = before[name]
            self._block(node.finalbody)
        elif isinstance(node, ast.With):
            self._block(node.body)

    def _submodule_side_effect(self, imported):
        """Importing `<this package>.child[...]` sets `child` on this package."""
        if self.is_package and imported.startswith(self.module + "."):
            child = imported[len(self.module) + 1:].partition(".")[0]
            self.names[child] = ("m", f"{self.module}.{child}")

    def _import_from(self, node):
        if node.level:
            base = self.package.rsplit(".", node.level - 1)[0] if node.level > 1 else self.package
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = _tf(node.module or "")
        self._submodule_side_effect(base)
        for alias in node.names:
            if alias.name == "*":
                self.names.update(self.inventory.exported(base))
                continue
            self._submodule_side_effect(f"{base}.{alias.name}")
            if base == self.module or (self.inventory.is_module(f"{base}.{alias.name}")
                                      and alias.name not in self.inventory.namespace(base)):
                binding = ("m", f"{base}.{alias.name}")
            else:
                binding = ("r", base, alias.name)
            self.names[alias.asname or alias.name] = binding

    def _assign(self, targets, value):
        binding = self._value(value)
        values = self._list(value)
        for target in targets:
            if isinstance(target, ast.Name):
                self.names[target.id] = binding
                if values is not None:
                    self._set_list(target.id, values)
                elif target.id == "__all__":
                    self.names.pop("__all__", None)  # not a literal: every public name

    def _set_list(self, name, values):
        self.lists[name] = values
        if name == "__all__":
            self.names["__all__"] = ("o", tuple(values))

    def _list(self, node):
        """The strings of a literal list/tuple (or a sum, or a known list), or None."""
        if isinstance(node, (ast.List, ast.Tuple)):
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                return [e.value for e in node.elts]
            return None
        if isinstance(node, ast.Name):
            return self.lists.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._list(node.left), self._list(node.right)
            return None if left is None or right is None else left + right
        return None

    def _call(self, call):
        func = _dotted(call.func)
        if func is None:
            return
        if func.endswith("remove_undocumented"):
            allowed = self._list(call.args[1]) if len(call.args) > 1 else []
            for keyword in call.keywords:
                if keyword.arg == "allowed_exception_list":
                    allowed = self._list(keyword.value)
            if allowed is None:
                return
            keep = set(_DOC_NAME.findall(ast.get_docstring(self.tree) or "")) | set(allowed)
            for name in list(self.names):
                if not name.startswith("_") and name not in keep:
                    del self.names[name]
        elif func.endswith((".extend", ".append")):
            owner, _, method = func.rpartition(".")
            if owner in self.lists and call.args:
                extra = (self._list(call.args[0]) if method == "extend"
                         else [call.args[0].value] if isinstance(call.args[0], ast.Constant)
                         else None)
                if extra is not None:
                    self._set_list(owner, self.lists[owner] + extra)
            elif owner == "__all__":
                self.names.pop("__all__", None)

    def _value(self, node):
        if isinstance(node, ast.Lambda):
            return ("f",)
        if isinstance(node, (ast.Name, ast.Attribute)):
            dotted = _dotted(node)
            if dotted is None:
                return ("o",)
            first, *rest = dotted.split(".")
            binding = self.names.get(first)
            if binding is None:
                return ("?",) if rest else ("o",)
            for part in rest:
                if binding[0] == "m":
                    binding = ("r", binding[1], part)
                elif binding[0] == "r" and self.inventory.resolve(binding) == "m":
                    binding = ("r", self._module_of(binding), part)
                else:
                    return ("?",)
            return binding
        if isinstance(node, ast.Call):
            func = _dotted(node.func) or ""
            last = func.rpartition(".")[2]
            if (last in ("namedtuple", "GeneratedProtocolMessageType")
                    or (last == "type" and len(node.args) == 3)):
                return ("c",)
            if last == "LazyLoader" and len(node.args) >= 3 and isinstance(node.args[2],
                                                                        ast.Constant):
                return ("m", _tf(node.args[2].value))
            if isinstance(node.func, ast.Call) and len(node.args) == 1:
                return self._value(node.args[0])  # decorator(...)(function)
            return ("o",)
        return ("o",)

    def _module_of(self, binding):
        """The module a module-valued reference names."""
        _, module, name = binding
        namespace = self.inventory.namespace(module)
        target = namespace.get(name)
        if target is None:
            return f"{module}.{name}"
        if target[0] == "m":
            return target[1]
        return self._module_of(target) if target[0] == "r" else f"{module}.{name}"


def _tf(name):
    return "tensorflow" + name[len("tensorflow_core"):] if (
        name == "tensorflow_core" or name.startswith("tensorflow_core.")) else name


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *parts[::-1]])


def _public_module(name):
    return not any(part.startswith("_") for part in name.split(".")[1:])


def build(wheel, estimator_wheel):
    inventory = Inventory({**index_sources(wheel), **index_estimator(estimator_wheel)})
    sys.setrecursionlimit(20000)
    modules = {}
    for name in sorted(inventory.sources):
        if _public_module(name):
            modules[name] = inventory.kinds(name)
    return {"source": "tensorflow-cpu 1.15.0 and tensorflow-estimator 1.15.1 wheels, read with "
                      "ast (tools/tf1_inventory.py)",
            "kinds": {"m": "module", "c": "class", "f": "function", "o": "other",
                      "?": "unknown (compiled)"},
            "modules": modules}


def main(argv):
    wheel, estimator_wheel = argv[1:3]
    output = argv[3] if len(argv) > 3 else OUTPUT
    data = build(wheel, estimator_wheel)
    with gzip.open(output, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(data, f, separators=(",", ":"), sort_keys=True)
    names = sum(len(v) for kinds in data["modules"].values() for v in kinds.values())
    print(f"{output}: {len(data['modules'])} modules, {names} public names")


if __name__ == "__main__":
    main(sys.argv)
