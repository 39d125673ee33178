"""Module attributes resolved at access time, for the modules of the drop-in namespace.

Nothing is cached: `tf.compat.v1.train.init_from_checkpoint` (and anything else) patched
while the engine traces a model_fn is what `tpu_estimator_compat.v1.train...` returns then,
and a package module written after this one was imported is found when first used.
Every module set up here is a package, so its served modules are importable by their
dotted path too (`_finder`).
"""
import importlib

# Module name -> (names, fallback) of every module set up by `install` so far, so that a
# test can resolve every entry of every table.
TABLES = {}


def resolve(spec):
    """The object named by `spec`.

    Args:
      spec: `'package.module'` for a module, or `'package.module:attr.path'` for an
        attribute reached from that module by successive `getattr` calls (so
        `'tensorflow:compat.v1.train'` is the very object `tf.compat.v1.train` is).

    Returns:
      The module or attribute.
    """
    module_name, _, path = spec.partition(":")
    value = importlib.import_module(module_name)
    for part in filter(None, path.split(".")):
        value = getattr(value, part)
    return value


def install(module_globals, names=None, fallback=None, missing_hint=""):
    """Gives a module a `__getattr__` and `__dir__` serving names lazily.

    Args:
      module_globals: the module's `globals()`.
      names: dict of public name to `resolve` spec, looked up first.
      fallback: optional `resolve` spec of a module whose attributes are served for any
        other (non-dunder) name, at access time.
      missing_hint: text appended to the AttributeError for unknown names, or a function
        of the name returning it.
    """
    module_name = module_globals["__name__"]
    names = dict(names or {})
    TABLES[module_name] = (names, fallback)

    def __getattr__(name):  # pylint: disable=invalid-name
        spec = names.get(name)
        if spec is not None:
            return resolve(spec)
        if fallback is not None and not name.startswith("__"):
            try:
                return getattr(resolve(fallback), name)
            except AttributeError:
                pass
        hint = missing_hint(name) if callable(missing_hint) else missing_hint
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}{hint}")

    def __dir__():  # pylint: disable=invalid-name
        listed = set(module_globals) | set(names)
        if fallback is not None:
            listed |= set(dir(resolve(fallback)))
        return sorted(listed)

    module_globals["__getattr__"] = __getattr__
    module_globals["__dir__"] = __dir__
    # A package (with nothing on disk beyond its own files), so that `import a.b.c` reaches
    # names served here: `tpu_estimator_compat.v1.compat.v1` is found by `_finder`.
    module_globals.setdefault("__path__", [])
