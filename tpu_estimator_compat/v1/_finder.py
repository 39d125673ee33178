"""Makes every module path of the namespace importable: `import tpu_estimator_compat.v1.X.Y`.

A finder at the front of `sys.meta_path` answers for names below `tpu_estimator_compat.v1`:

1. a path listed in `_paths.MODULES`: a module made from its `Virtual` entry, or the module
   its alias spec names;
2. a submodule of an aliased module (or of a `Virtual`'s fallback module): that module's
   own submodule, imported under its real name (`...v1.python.ops.array_ops` is
   `tensorflow.python.ops.array_ops`; never a second copy of it);
3. otherwise, when the parent's attribute of that name is a module: that module
   (`...v1.compat.v1`, `...v1.contrib.tpu`).

Files of this package are left to the normal import system. An alias is the very module
object, with its own `__spec__` kept.

A `Virtual` entry's `names` win over its submodules of the same name, before and after these
are imported, as in TF 1.x, whose packages star-import their submodules' names after the
submodules: `contrib.framework.python.ops.arg_scope` is the function as an attribute, the
module by its import path (`sys.modules`).
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths

ROOT = "tpu_estimator_compat.v1"
_PREFIX = ROOT + "."
_FALLBACK_ATTR = "_tpu_estimator_compat_fallback"


def served_module(relative_path):
    """The module `tpu_estimator_compat.v1.<relative_path>` (imported on first use).

    Raises:
      ModuleNotFoundError: the namespace serves no module at that path.
    """
    return importlib.import_module(_PREFIX + relative_path if relative_path else ROOT)


class _AliasLoader(importlib.abc.Loader):
    """Loads an existing module object under a second name."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        module.__spec__ = self._spec  # the import system set ours; the module keeps its own


class _VirtualModule(types.ModuleType):
    """A module whose served names the import system does not replace by the submodules of the
    same names it sets as attributes once imported."""

    def __init__(self, name, served_names):
        super().__init__(name)
        object.__setattr__(self, "_tpu_estimator_compat_served", frozenset(served_names))

    def __setattr__(self, name, value):
        if (name in self._tpu_estimator_compat_served and isinstance(value, types.ModuleType)
                and sys.modules.get(f"{self.__name__}.{name}") is value):
            return  # the import system binding a submodule: the served name stays
        super().__setattr__(name, value)


class _VirtualLoader(importlib.abc.Loader):
    """Makes the module of a `_paths.Virtual` entry."""

    def __init__(self, entry, relative_path):
        self._entry = entry
        self._relative_path = relative_path

    def create_module(self, spec):
        return _VirtualModule(spec.name, self._entry.names)

    def exec_module(self, module):
        fallback = self._entry.fallback
        module.__doc__ = (f"TF1's `{module.__name__[len(_PREFIX):]}`, served by "
                          "tpu_estimator_compat" + (f" (else {fallback})." if fallback else "."))
        module.__path__ = []
        setattr(module, _FALLBACK_ATTR, fallback)
        below = {name: _PREFIX + path
                 for name, path in _paths.children(self._relative_path).items()}
        _lazy.install(vars(module), names={**below, **self._entry.names}, fallback=fallback)


class V1PathFinder(importlib.abc.MetaPathFinder):
    """The finder described in the module docstring."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        relative_path = fullname[len(_PREFIX):]
        entry = _paths.MODULES.get(relative_path)
        if isinstance(entry, _paths.Virtual):
            return importlib.machinery.ModuleSpec(
                fullname, _VirtualLoader(entry, relative_path), is_package=True)
        if entry is not None:
            return self._alias_spec(fullname, _lazy.resolve(entry))
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is None:
            return None
        if (parent.__name__ == parent_name and getattr(parent, "__file__", None)
                and importlib.machinery.PathFinder.find_spec(fullname, parent.__path__)):
            return None  # a file of this package
        module = _child_module(parent, parent_name, child)
        return None if module is None else self._alias_spec(fullname, module)

    @staticmethod
    def _alias_spec(fullname, module):
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module))


def _child_module(parent, parent_name, child):
    """The module served as `parent.child`, or None."""
    fallback = getattr(parent, _FALLBACK_ATTR, None)
    real_package = (parent.__name__ if parent.__name__ != parent_name
                    else fallback and _lazy.resolve(fallback).__name__)
    if real_package:
        real_name = f"{real_package}.{child}"
        try:
            return importlib.import_module(real_name)
        except ModuleNotFoundError as error:
            if error.name != real_name:
                raise
    value = getattr(parent, child, None)
    return value if isinstance(value, types.ModuleType) else None


def install():
    """Puts the finder first in `sys.meta_path` (once)."""
    if not any(isinstance(finder, V1PathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, V1PathFinder())
