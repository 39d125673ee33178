"""`python -m tpu_estimator_compat run SCRIPT.py ARGS` / `run -m MODULE ARGS`: a legacy TF1
program, unmodified, on this package.

The program runs as `python SCRIPT.py ARGS` / `python -m MODULE ARGS` would run it (`runpy`:
same `sys.argv`, `__main__`, `sys.path[0]`, exit status, so absl / `tf.app.run` flags parse
as usual), with one difference: `import` statements of the PROGRAM's own code that name
`tensorflow` or `tensorflow_estimator` (and any module below them) get this package's v1
namespace instead: `import tensorflow as tf` binds `tpu_estimator_compat.v1`,
`from tensorflow.contrib import tpu` binds `tpu_estimator_compat.v1.contrib.tpu`,
`from tensorflow_estimator.python.estimator.tpu import tpu_estimator` binds
`tpu_estimator_compat.v1.python.estimator.tpu.tpu_estimator`.

How: `builtins.__import__` (which every `import` statement calls) is wrapped. The caller's
module globals, which Python passes to it, say which file imports: program code is any file
outside the installed-library directories (site-packages, dist-packages, the standard
library) and outside this package (and outside any `--keep-tf2` directory). Library modules named by
`--v1-for MODULE` or in `v1_libraries()` (TF1-era libraries that cannot import on TensorFlow
2.21: gin-config's `gin.tf`, which subclasses `tf.estimator.SessionRunHook`, TF-GAN's
`tensorflow_gan`, whose hooks and `TPUGANEstimator` subclass `tf.estimator.SessionRunHook` and
`tf.compat.v1.estimator.tpu.TPUEstimator`, and tensorflow_hub before 0.16, whose
`LatestModuleExporter` subclasses `tf.estimator.Exporter`),
and the modules below them, get the v1 namespace too. Everything else (TensorFlow itself, tf_keras,
tensorflow_hub, numpy...) imports the real TensorFlow 2, whose module stays
`sys.modules['tensorflow']`.

A program file that is TensorFlow 2 code using the estimator API (`program_era.py` decides,
from the names the file uses: `tf.compat.v1...` reached from `import tensorflow` and no
TF1-only name) gets `tpu_estimator_compat.v2` for `import tensorflow` instead: TensorFlow 2
itself, with `tf.estimator`, `tf.compat.v1` (the v1 namespace) and `tf.keras` (tf_keras, as
TensorFlow 2.15 had it) served; `tensorflow.keras...` module paths are tf_keras's,
`tensorflow.estimator...` and `tensorflow.compat.v1...` the v1 namespace's, other
`tensorflow.x` module paths TensorFlow's own. The decision is logged once per such file.

tf-slim (`import tf_slim`, the library tf.contrib.slim became), imported by the program or a
library, is repaired as `tf.contrib.slim` is (`rebuilt_apis/tf_slim.py`): its modules read
TensorFlow internals that TensorFlow 2.21 moved (`control_flow_ops.cond` in
`metrics.streaming_concat`...).

Python names TF1-era code calls that Python 3.11 removed (`inspect.getargspec`) exist while
the program runs (`legacy_python.py`), and command-line flags no absl flag of the program
consumed (`tf.app.run` ignores them) are named once on stderr (`unused_flags.py`).

Limits: `importlib.import_module('tensorflow')` and `__import__` called by hand are not
redirected (they give real TensorFlow 2); a library installed outside site-packages (on
PYTHONPATH) counts as program code unless listed with `--keep-tf2`; objects a library hands
the program are TF2 objects.
"""
import builtins
import functools
import importlib.metadata
import itertools
import os
import runpy
import site
import sys
import sysconfig

from tpu_estimator_compat.tf1_behaviour import legacy_python
from tpu_estimator_compat.cli import program_era
from tpu_estimator_compat.cli import unused_flags
from tpu_estimator_compat.cli import vendored
from tpu_estimator_compat.config import run_config
from tpu_estimator_compat.v1 import _served_imports

_REDIRECTED_ROOTS = _served_imports.REDIRECTED_ROOTS
NAMESPACE = _served_imports.NAMESPACE
redirected_name = _served_imports.redirected_name
TF2_NAMESPACE = "tpu_estimator_compat.v2"
# Module paths a TensorFlow 2 file imports from this package or tf_keras: (prefix, target).
_TF2_PATHS = (("tensorflow.compat.v1", NAMESPACE), ("tensorflow.compat.v2", TF2_NAMESPACE),
              ("tensorflow.compat", TF2_NAMESPACE + ".compat"),
              ("tensorflow.estimator", NAMESPACE + ".estimator"),
              ("tensorflow.keras.estimator", TF2_NAMESPACE + ".keras_estimator"),
              ("tensorflow.keras", "tf_keras"), ("tensorflow_estimator", NAMESPACE))
_LIBRARY_PARTS = ("site-packages", "dist-packages")
# Libraries served the v1 namespace by default: they need TF1 names to import at all.
V1_LIBRARIES = ("gin.tf", "tensorflow_gan")
# ...and those that do only before a version: (module, distribution, first TF2-only version).
_V1_LIBRARIES_BEFORE = (("tensorflow_hub", "tensorflow-hub", (0, 16)),)


def _version(distribution):
    """The installed version of `distribution` as a tuple of its leading numbers, or None."""
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    numbers = []
    for part in text.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def v1_libraries():
    """The libraries served the v1 namespace without `--v1-for`: `V1_LIBRARIES`, and
    tensorflow_hub when the installed one is older than 0.16 (TF1 Hub format:
    `hub.Module`, `create_module_spec`; it imports `tf.compat.v1.estimator`)."""
    older = tuple(module for module, distribution, first_tf2 in _V1_LIBRARIES_BEFORE
                  if (_version(distribution) or first_tf2) < first_tf2)
    return V1_LIBRARIES + older


def _library_dirs(keep_tf2_dirs):
    dirs = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    dirs.add(site.getusersitepackages())
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this package
    dirs.update(keep_tf2_dirs)
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


class ImportRedirect:
    """The `builtins.__import__` wrapper described in the module docstring."""

    def __init__(self, keep_tf2_dirs=(), v1_for=V1_LIBRARIES):
        self._library_dirs = _library_dirs(keep_tf2_dirs)
        self._v1_for = tuple(v1_for)
        self._original = None
        self.is_program_file = functools.lru_cache(maxsize=None)(self._is_program_file)
        self.is_tf2_file = functools.lru_cache(maxsize=None)(self._is_tf2_file)

    def _is_program_file(self, path):
        path = os.path.realpath(path)
        parts = path.split(os.sep)
        return not (any(part in _LIBRARY_PARTS for part in parts)
                    or path.startswith(self._library_dirs))

    def serves_v1_to(self, module_name):
        """Whether library module `module_name` is one `--v1-for` / `v1_libraries()` names or
        lies below one."""
        return any(module_name == name or module_name.startswith(name + ".")
                   for name in self._v1_for)

    @staticmethod
    def _is_tf2_file(path):
        era = program_era.era_of_file(path)
        if era.tf2:
            sys.stderr.write(
                f"tpu_estimator_compat run: {path} is TensorFlow 2 code (it uses "
                f"{', '.join(era.tf2_names[:3])} and no TF1-only name): its `import "
                "tensorflow` gets TensorFlow 2 with tf.estimator (tpu_estimator_compat.v2)\n")
        return era.tf2

    def _namespace_for(self, module_globals):
        """The namespace the importing module gets: NAMESPACE, TF2_NAMESPACE, or None
        (TensorFlow itself)."""
        module_globals = module_globals or {}
        if self.serves_v1_to(module_globals.get("__name__") or ""):
            return NAMESPACE
        path = module_globals.get("__file__")
        if not path or not self.is_program_file(path):
            return None
        return TF2_NAMESPACE if os.path.isfile(path) and self.is_tf2_file(path) else NAMESPACE

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if level == 0 and name.partition(".")[0] == "tf_slim" and not (
                (globals or {}).get("__name__") or "").startswith("tf_slim"):
            return _served_imports.import_tf_slim(self._original, name, globals, locals,
                                                  fromlist)
        namespace = None
        if level == 0 and name.partition(".")[0] in _REDIRECTED_ROOTS:
            namespace = self._namespace_for(globals)
        if namespace is None:
            return self._original(name, globals, locals, fromlist, level)
        target = redirected_name(name) if namespace == NAMESPACE else tf2_redirected_name(name)
        module = self._original(target, globals, locals, fromlist, level)
        if not fromlist:  # `import tensorflow[.x.y]` binds the namespace itself
            self._original(namespace, globals, locals, (), 0)  # (imported by then for v1)
            return sys.modules[namespace]
        return module

    def install(self):
        self._original = builtins.__import__
        builtins.__import__ = self

    def uninstall(self):
        builtins.__import__ = self._original


def tf2_redirected_name(name):
    """What a TensorFlow 2 file's import of `name` imports: `tensorflow` ->
    `tpu_estimator_compat.v2`, `tensorflow.estimator` and `tensorflow.keras` -> its
    `estimator` and `keras`, the `_TF2_PATHS` to theirs, other `tensorflow.x` itself."""
    if name in ("tensorflow", "tensorflow.estimator", "tensorflow.keras"):
        return TF2_NAMESPACE + name[len("tensorflow"):]
    for prefix, target in _TF2_PATHS:
        if name == prefix or name.startswith(prefix + "."):
            return target + name[len(prefix):]
    return name


def run(argv, keep_tf2_dirs=(), v1_for=(), seed=None):
    """Runs `argv` = `[SCRIPT, ARGS...]` or `['-m', MODULE, ARGS...]` with the redirect;
    the modules in `v1_for` (and `v1_libraries()`) get the v1 namespace too. With `seed`,
    every RunConfig the program builds without a `tf_random_seed` gets `seed`.

    Returns only if the program returns; its `SystemExit` and exceptions propagate (so the
    process exits with the program's status).
    """
    redirect = ImportRedirect([os.path.abspath(d) for d in keep_tf2_dirs],
                              v1_libraries() + tuple(v1_for))
    redirect.install()
    try:
        with legacy_python.removed_names_restored(), unused_flags.warned(), \
                run_config.default_tf_random_seed(seed):
            if argv[0] == "-m":
                sys.argv = [argv[1]] + list(argv[2:])  # runpy puts the module's path in argv[0]
                sys.path[0] = os.getcwd()
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(argv)
                if os.path.isfile(argv[0]):
                    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
                else:  # a directory or zip file with __main__.py: runpy puts it first itself
                    del sys.path[0]
                runpy.run_path(argv[0], run_name="__main__")
    except ImportError as error:  # from a copy of tpu_estimator.py: the fix named
        named = vendored.import_error_with_fix(error, redirect.is_program_file)
        if named is None:
            raise
        raise named from error
    finally:
        redirect.uninstall()
