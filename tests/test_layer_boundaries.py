"""The layer map, checked statically (docs/how-it-works.md has the same table).

Every module of a room (a top folder, or a top module such as estimator.py) imports only its
own room and the rooms `ALLOWED` lists for it, counting imports inside functions (lazy
imports) and the module paths named in strings (the v1 namespace's name tables,
`importlib.import_module` targets). The table has no cycle. Only `tf_internals/` (the
seam) imports TensorFlow's private modules. In particular engine/ and host/ never import
each other (the engine takes hooks through `engine.hook_placement`, the host reads the
engine's `engine.step_outputs` types by their fields), and only calls.py, which builds
each call for the facade (estimator.py, which validates and delegates), imports both.
"""
import ast
import pathlib
import re

import pytest

_PACKAGE = "tpu_estimator_compat"
_ROOT = pathlib.Path(__file__).resolve().parents[1] / _PACKAGE
_ENGINE = f"{_PACKAGE}.engine"
_HOST = f"{_PACKAGE}.host"

# room: the rooms its modules may import (besides its own). The package's __init__ (lazy
# public names) may import any room.
ALLOWED = {
    "tf_internals": set(),
    "log": set(),
    "config": {"log"},
    "api": {"log", "tf_internals"},
    "tf1_behaviour": {"api", "log", "tf_internals"},
    "state": {"log", "tf_internals"},
    "rebuilt_apis": {"log", "tf_internals"},
    "engine": {"api", "config", "log", "state", "tf1_behaviour", "tf_internals"},
    "export": {"api", "config", "engine", "log", "state", "tf_internals"},
    "host": {"api", "config", "rebuilt_apis", "log", "state", "tf1_behaviour", "tf_internals"},
    "calls": {"api", "config", "engine", "export", "host", "log", "state"},
    "estimator": {"api", "calls", "config", "engine", "log", "state", "tf1_behaviour"},
    "estimator_extenders": {"api", "engine", "estimator"},
    "train_and_evaluate_tasks": {"api", "config", "estimator", "export", "host", "log",
                                 "state"},
    "canned": {"api", "estimator", "rebuilt_apis"},
    "best_exporter": {"log", "train_and_evaluate_tasks"},
    "keras_estimator": {"api", "config", "estimator", "log", "tf_internals"},
    "v1": {"api", "best_exporter", "canned", "config", "engine", "estimator",
           "estimator_extenders", "export", "keras_estimator", "rebuilt_apis", "log", "state",
           "tf1_behaviour", "train_and_evaluate_tasks"},
    "v2": {"canned", "keras_estimator", "tf1_behaviour", "v1"},
    # config: run --seed sets RunConfig's default seed; tf1_behaviour: Python names restored
    "cli": {"config", "log", "tf1_behaviour", "v1", "v2"},
    "__main__": {"cli"},
}
# TensorFlow's private surface: only the seam imports these.
_PRIVATE_MODULES = re.compile(r"^(tensorflow\.(python|compiler|core)|tf_keras\.src)(\.|$)")
# A module path of this package named in a string ('pkg.mod' or 'pkg.mod:attribute').
_PACKAGE_PATH = re.compile(rf"^{_PACKAGE}(\.[A-Za-z_]\w*)+(:[\w.]*)?$")


def _module_name(path):
    parts = path.relative_to(_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(source, module_name, is_package=False):
    """Every module name `source` imports, anywhere in it (functions too), relative imports
    resolved; `from a import b` counts as importing `a` and `a.b`; a string naming a module
    of the package (a name table's target) counts as importing it."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _PACKAGE_PATH.match(node.value):
                names.add(node.value.split(":")[0])
        elif _is_v1_table_entry(node):  # v1/_paths.py: _from("api.spec", ...), f"{_PKG}.x"
            relative = node.args[0] if isinstance(node, ast.Call) else node.values[1]
            names.add(f"{_PACKAGE}.{relative.value.lstrip('.')}".split(":")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module_name.split(".")
                package = package[:len(package) - node.level + is_package]
                base = ".".join(package + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _is_v1_table_entry(node):
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Name) and node.func.id == "_from" and node.args
                and isinstance(node.args[0], ast.Constant))
    return (isinstance(node, ast.JoinedStr) and len(node.values) == 2
            and isinstance(node.values[0], ast.FormattedValue)
            and getattr(node.values[0].value, "id", None) == "_PKG"
            and isinstance(node.values[1], ast.Constant))


def _imports_layer(names, layer):
    return sorted(name for name in names if name == layer or name.startswith(layer + "."))


def _modules(layer=None):
    """{module name: imported names} of the package's modules (of `layer` only, if given)."""
    modules = {}
    for path in sorted(_ROOT.rglob("*.py")):
        name = _module_name(path)
        if layer is None or name == layer or name.startswith(layer + "."):
            modules[name] = _imported(path.read_text(), name, path.name == "__init__.py")
    return modules


def _room(module_name):
    parts = module_name.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_room_is_in_the_table():
    rooms = {_room(name) for name in _modules()} - {None}
    assert rooms == set(ALLOWED), "add the new room to ALLOWED (and to docs/how-it-works.md's table)"


def test_every_room_imports_only_what_the_table_allows():
    offending = {}
    for module, names in _modules().items():
        room = _room(module)
        if room is None:
            continue  # the package's __init__: lazy public names from every room
        for name in names:
            target = _room(name) if name.startswith(_PACKAGE + ".") else None
            if target and target != room and target not in ALLOWED[room]:
                offending.setdefault(module, []).append(name)
    assert offending == {}, (
        "imports against the layer map (ALLOWED here, docs/how-it-works.md): move the "
        "shared code to a room both may import, or pass it in from the layer above")


def test_the_table_has_no_cycle():
    done, on_path = set(), []

    def visit(room):
        assert room not in on_path, " -> ".join(on_path[on_path.index(room):] + [room])
        if room in done:
            return
        on_path.append(room)
        for target in sorted(ALLOWED[room]):
            visit(target)
        on_path.pop()
        done.add(room)

    for room in ALLOWED:
        visit(room)


def test_only_the_seam_touches_tensorflow_internals():
    offending = {}
    for path in sorted(_ROOT.rglob("*.py")):
        module = _module_name(path)
        if _room(module) == "tf_internals":
            continue
        source = path.read_text()
        private = sorted(name for name in _imported(source, module, path.name == "__init__.py")
                         if _PRIVATE_MODULES.match(name))
        # lazy imports: importlib.import_module("tensorflow.python...") (the v1 name tables
        # name TF1 module paths for the user's program to import; they are no use here)
        private += sorted(node.args[0].value for node in ast.walk(ast.parse(source))
                          if isinstance(node, ast.Call) and node.args
                          and getattr(node.func, "attr", None) == "import_module"
                          and isinstance(node.args[0], ast.Constant)
                          and _PRIVATE_MODULES.match(str(node.args[0].value)))
        if private:
            offending[module] = private
    assert offending == {}, (
        "TensorFlow's private surface goes through tpu_estimator_compat.tf_internals (the "
        "seam): add the symbol there, with what it provides and the TF version checked")


def test_the_layers_have_modules():
    assert len(_modules(_ENGINE)) > 10 and len(_modules(_HOST)) > 10


@pytest.mark.parametrize("layer, other", [(_ENGINE, _HOST), (_HOST, _ENGINE)])
def test_engine_and_host_do_not_import_each_other(layer, other):
    offending = {module: _imports_layer(names, other)
                 for module, names in _modules(layer).items() if _imports_layer(names, other)}
    assert offending == {}, (
        f"{layer} must not import {other}: only calls.py (a call of the facade) joins "
        "them. Pass "
        "what is needed through engine.hook_placement / engine.step_outputs, or move the "
        "shared helper to a lower layer (api/, tf1_behaviour/, state/).")


def test_only_the_call_builder_imports_both():
    joining = sorted(module for module, names in _modules().items()
                     if _imports_layer(names, _ENGINE) and _imports_layer(names, _HOST))
    assert joining == [f"{_PACKAGE}.calls"]


@pytest.mark.parametrize("source", [
    "from tpu_estimator_compat.host import hooks",
    "import tpu_estimator_compat.host.hooks as hooks_lib",
    "from tpu_estimator_compat import host",
    "from ..host import hooks",
    "from ..host.hooks import HookRun",
    "def later():\n    from tpu_estimator_compat.host.hooks import HookRun",
])
def test_every_import_form_is_seen(source):
    names = _imported(source, f"{_ENGINE}.model_engine")
    assert _imports_layer(names, _HOST)


@pytest.mark.parametrize("source", [
    'NAMES = {"TPUClusterResolver": "tpu_estimator_compat.host.hooks:HookRun"}',
    '_lazy.install(globals(), fallback="tpu_estimator_compat.host.hooks")',
    'NAMES = {name: f"tpu_estimator_compat.host.hooks:{name}" for name in ("a", "b")}',
    'MODULES = {"python.estimator.x": Virtual(_from("host.hooks", "HookRun"))}',
    '_SLIM = f"{_PKG}.host.hooks"',
])
def test_name_table_targets_count_as_imports(source):
    assert _imports_layer(_imported(source, f"{_PACKAGE}.v1._paths"), _HOST)


def test_relative_imports_resolve_from_the_module_or_package():
    assert f"{_ENGINE}.loops" in _imported("from . import loops", f"{_ENGINE}.model_engine")
    assert f"{_ENGINE}.loops" in _imported("from . import loops", _ENGINE, is_package=True)
    assert not _imports_layer(_imported("from . import hooks", f"{_ENGINE}.model_engine"),
                              _HOST)


_DOCS_TABLE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "how-it-works.md"


def _documented_table(text):
    """{room: rooms it may import} of the layer table in docs/how-it-works.md: rows
    `| `a/`, `b.py` | x, y / z |` ('/' pairs the rooms with their lists), '-' for none,
    'every room but x and y' for all the others."""
    rows = re.findall(r"^\| *(`[^|]+?) *\| *([^|]+?) *\|$", text, re.MULTILINE)
    table = {}
    for rooms, allowed in rows:
        rooms = [re.sub(r"/$|\.py$", "", room) for room in re.findall(r"`([^`]+)`", rooms)]
        lists = allowed.split(" / ") if len(rooms) > 1 and " / " in allowed else [allowed]
        for index, room in enumerate(rooms):
            listed = lists[min(index, len(lists) - 1)].strip()
            every_but = re.match(r"every room but (.+)$", listed)
            if every_but:
                excluded = set(re.split(r", | and ", every_but.group(1)))
                table[room] = set(ALLOWED) - excluded - {room}
            else:
                table[room] = set() if listed == "-" else set(re.split(r", *", listed))
    return table


def test_the_documented_table_parses():
    table = _documented_table("| `a/`, `b.py` | x, y / z |\n| `c/` | - |\n"
                              "| `d/` | every room but a and c |\n")
    assert table["a"] == {"x", "y"} and table["b"] == {"z"} and table["c"] == set()
    assert table["d"] == set(ALLOWED) - {"a", "c", "d"}


def test_the_documented_table_is_this_table():
    documented = _documented_table(_DOCS_TABLE.read_text())
    differences = {room: {"docs only": sorted(documented.get(room, set()) - allowed),
                          "test only": sorted(allowed - documented.get(room, set()))}
                   for room, allowed in ALLOWED.items() if documented.get(room) != allowed}
    assert differences == {}, (
        "docs/how-it-works.md's layer table and ALLOWED here disagree: make them the same")
