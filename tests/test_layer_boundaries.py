"""The engine/host boundary, checked statically: engine/ and host/ never import each other
(the engine takes hooks through `engine.hook_placement`, the host reads the engine's
`engine.step_outputs` types by their fields), and only the facade, estimator.py, imports both.
"""
import ast
import pathlib

import pytest

_PACKAGE = "tpu_estimator_compat"
_ROOT = pathlib.Path(__file__).resolve().parents[1] / _PACKAGE
_ENGINE = f"{_PACKAGE}.engine"
_HOST = f"{_PACKAGE}.host"


def _module_name(path):
    parts = path.relative_to(_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(source, module_name, is_package=False):
    """Every module name `source` imports, anywhere in it (functions too), relative imports
    resolved; `from a import b` counts as importing `a` and `a.b`."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
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


def test_the_layers_have_modules():
    assert len(_modules(_ENGINE)) > 10 and len(_modules(_HOST)) > 10


@pytest.mark.parametrize("layer, other", [(_ENGINE, _HOST), (_HOST, _ENGINE)])
def test_engine_and_host_do_not_import_each_other(layer, other):
    offending = {module: _imports_layer(names, other)
                 for module, names in _modules(layer).items() if _imports_layer(names, other)}
    assert offending == {}, (
        f"{layer} must not import {other}: only the facade (estimator.py) joins them. Pass "
        "what is needed through engine.hook_placement / engine.step_outputs, or move the "
        "shared helper to a lower layer (api/, tf1/, state/).")


def test_only_the_facade_imports_both():
    joining = sorted(module for module, names in _modules().items()
                     if _imports_layer(names, _ENGINE) and _imports_layer(names, _HOST))
    assert joining == [f"{_PACKAGE}.estimator"]


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


def test_relative_imports_resolve_from_the_module_or_package():
    assert f"{_ENGINE}.loops" in _imported("from . import loops", f"{_ENGINE}.model_engine")
    assert f"{_ENGINE}.loops" in _imported("from . import loops", _ENGINE, is_package=True)
    assert not _imports_layer(_imported("from . import hooks", f"{_ENGINE}.model_engine"),
                              _HOST)
