"""`python -m tpu_estimator_compat check PATH...`: which TF1 APIs a codebase uses, and whether
this package serves them. Static: the code is parsed (`ast`), never imported or run.

Every use of a name below `tensorflow` or `tensorflow_estimator` is collected, following
`import ... as` aliases, `from ... import` names, plain assignments (`slim = tf.contrib.slim`)
and attribute chains (`tf.contrib.tpu.TPUEstimator`). Each is then looked up in the v1
namespace itself, as `tpu_estimator_compat.v1` serves it to a rewritten or `run` program
(TensorFlow is imported for that; no user code is): the path is followed name by name, as the
import system and `_finder` do (listed module paths, attributes, submodules), while the value
is a module;
the API reported is the path up to the first non-module (`tf.flags.FLAGS.model_dir` is
`tensorflow.flags.FLAGS`). It is

- unsupported if the namespace does not serve it (with the namespace's own hint);
- supported with a documented difference if it is, or lies below, an entry of
  `DIFFERENCES` (matched by path and by identity of the object served);
- supported otherwise;
- `tf2` for `tensorflow.compat.v2` names: TensorFlow 2 code, which the namespace serves as
  TensorFlow itself does (`compat.v2` is `tensorflow.compat.v2`), whether or not TensorFlow
  2.21 still has the name (those it lacks say so, but do not fail the check).
"""
import ast
import dataclasses
import os
import sys
import types

from tpu_estimator_compat.v1 import _finder
from tpu_estimator_compat.v1 import _paths

ROOTS = ("tensorflow", "tensorflow_estimator")
README = "README.md"
_KNOWN = "known-differences-from-the-original"
_CONTRIB = "tf1-module-paths-and-contrib-modules"
_TF2 = "compat.v2"

# v1-relative path -> README section (anchor) that documents how it differs.
DIFFERENCES = {
    "contrib.tpu.TPUEstimator": _KNOWN,
    "estimator.Estimator": _KNOWN,
    "estimator.train_and_evaluate": _KNOWN,
    "contrib.tpu.CrossShardOptimizer": _KNOWN,
    "contrib.tpu.cross_replica_sum": _KNOWN,
    "train.SessionRunHook": _KNOWN,
    "train.CheckpointSaverHook": _KNOWN,
    "train.CheckpointSaverListener": _KNOWN,
    "train.LoggingTensorHook": _KNOWN,
    "train.StopAtStepHook": _KNOWN,
    "train.SummarySaverHook": _KNOWN,
    "train.ProfilerHook": _KNOWN,
    "contrib.tpu.AsyncCheckpointSaverHook": _CONTRIB,
    "contrib.training.HParams": _CONTRIB,
}
_SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "site-packages", "node_modules"}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How the namespace serves one API: `status` is 'supported', 'difference',
    'unsupported' or 'tf2'; `detail` is the README anchor or the reason."""
    api: str
    status: str
    detail: str = ""


def _v1_relative(parts):
    """The path below the namespace for `tensorflow[_estimator].a.b`, without `compat.v1.`."""
    parts = list(parts[1:])
    while parts[:2] == ["compat", "v1"]:
        parts = parts[2:]
    return ".".join(parts)


class Resolver:
    """Looks API paths up in the v1 namespace (cached)."""

    def __init__(self):
        self._cache = {}
        self._difference_ids = None

    def verdict(self, path):
        if path not in self._cache:
            self._cache[path] = self._verdict(path)
        return self._cache[path]

    def _verdict(self, path):
        parts = path.split(".")
        relative = _v1_relative(parts)
        tf2 = relative == _TF2 or relative.startswith(_TF2 + ".")
        value, walked = _finder.served_module(""), parts[:1]
        for part in parts[1:]:
            if not isinstance(value, types.ModuleType):
                break
            try:
                value = _step(value, ".".join(walked[1:] + [part]))
            except (AttributeError, ImportError) as error:
                api = ".".join(walked + [part])
                if tf2:
                    return Verdict(api, "tf2", _tf2_missing(api, error))
                return Verdict(api, "unsupported", str(error))
            walked.append(part)
        api = ".".join(walked)
        if tf2:
            return Verdict(api, "tf2")
        relative = _v1_relative(walked)
        for key, anchor in DIFFERENCES.items():
            if relative == key or relative.startswith(key + "."):
                return Verdict(api, "difference", anchor)
        anchor = self._differences_by_identity().get(id(value))
        if anchor is not None and not isinstance(value, types.ModuleType):
            return Verdict(api, "difference", anchor)
        return Verdict(api, "supported")

    def _differences_by_identity(self):
        if self._difference_ids is None:
            self._difference_ids = {id(lookup(key)): anchor
                                    for key, anchor in DIFFERENCES.items()}
        return self._difference_ids


def _tf2_missing(api, error):
    import tensorflow as tf  # noqa: PLC0415  (imported already, by the namespace)
    text = f"not in TensorFlow {tf.__version__} ({error})"
    if ".keras." in api + ".":
        text += ("; tf.keras is Keras 3 there: Keras 2 names are tf_keras's, which "
                 "TF_USE_LEGACY_KERAS=1 makes tf.keras")
    return text


def _step(module, relative_path):
    """What the namespace serves at `relative_path`, one name below `module` (served at the
    path's parent), looked up as the import system does: listed paths first (`_paths`), then
    the attribute, then a submodule."""
    if relative_path in _paths.MODULES:
        return _finder.served_module(relative_path)
    try:
        return getattr(module, relative_path.rpartition(".")[2])
    except AttributeError:
        try:
            return _finder.served_module(relative_path)
        except ModuleNotFoundError:
            pass
        raise


def lookup(relative_path):
    """What the namespace serves at `relative_path` (below `tpu_estimator_compat.v1`).

    Raises:
      AttributeError, ImportError: nothing is served there.
    """
    value, parts = _finder.served_module(""), relative_path.split(".")
    for index in range(len(parts)):
        value = _step(value, ".".join(parts[:index + 1]))
    return value


class _Collector(ast.NodeVisitor):
    """Every TF API path used in one module, with its first line."""

    def __init__(self):
        self.aliases = {}
        self.uses = {}

    def _use(self, path, line):
        if "." in path:
            self.uses.setdefault(path, line)

    def visit_Import(self, node):  # noqa: N802
        for alias in node.names:
            root = alias.name.partition(".")[0]
            if root in ROOTS:
                self.aliases[alias.asname or root] = alias.name if alias.asname else root
                self._use(alias.name, node.lineno)

    def visit_ImportFrom(self, node):  # noqa: N802
        if node.level or not node.module or node.module.partition(".")[0] not in ROOTS:
            return
        for alias in node.names:
            if alias.name == "*":
                self._use(node.module, node.lineno)
                continue
            path = f"{node.module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = path
            self._use(path, node.lineno)

    def _path(self, node):
        """The TF path an expression (Name or attribute chain) names, or None."""
        attributes = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return ".".join([self.aliases[node.id]] + attributes[::-1])
        return None

    def visit_Attribute(self, node):  # noqa: N802
        path = self._path(node)
        if path is None:
            self.generic_visit(node)
        else:
            self._use(path, node.lineno)

    def visit_Assign(self, node):  # noqa: N802
        self.generic_visit(node)
        path = self._path(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if path is None:
                    self.aliases.pop(target.id, None)
                else:
                    self.aliases[target.id] = path


def uses_in_source(source, filename="<source>"):
    """`{api path: first line}` of the TF names used in Python `source`.

    Raises:
      SyntaxError: `source` does not parse.
    """
    collector = _Collector()
    collector.visit(ast.parse(source, filename))
    return collector.uses


def python_files(paths):
    """The .py files named by `paths` (files, or directories searched recursively)."""
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        if not os.path.isdir(path):
            raise FileNotFoundError(f"check: no such file or directory: {path}")
        for directory, subdirs, files in os.walk(path):
            subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS)
            yield from (os.path.join(directory, f) for f in sorted(files) if f.endswith(".py"))


def check(paths, out=sys.stdout, resolver=None):
    """Prints the report for `paths`; returns `{status: set of APIs}` (with 'unparsable')."""
    resolver = resolver or Resolver()
    totals = {"supported": set(), "difference": set(), "unsupported": set(), "tf2": set(),
              "unparsable": set()}
    for filename in python_files(paths):
        with open(filename, encoding="utf-8", errors="replace") as f:
            source = f.read()
        try:
            uses = uses_in_source(source, filename)
        except SyntaxError as error:
            print(f"{filename}\n  cannot parse ({error.msg}, line {error.lineno}): not checked",
                  file=out)
            totals["unparsable"].add(filename)
            continue
        verdicts = {}
        for path, line in uses.items():
            verdict = resolver.verdict(path)
            verdicts.setdefault(verdict, line)
        if verdicts:
            print(filename, file=out)
        for verdict, line in sorted(verdicts.items(), key=lambda item: item[1]):
            totals[verdict.status].add(verdict.api)
            print(f"  {_line(verdict, line)}", file=out)
    print(_summary(totals), file=out)
    return totals


def _line(verdict, line):
    label = {"supported": "supported", "difference": "difference",
             "unsupported": "UNSUPPORTED", "tf2": "TF2"}[verdict.status]
    text = f"{label:<12} {verdict.api}  (line {line})"
    if verdict.status == "difference":
        return f"{text}  see {README}#{verdict.detail}"
    if verdict.detail:
        return f"{text}: {verdict.detail}"
    return text


def _summary(totals):
    count = sum(len(totals[s]) for s in ("supported", "difference", "unsupported", "tf2"))
    text = (f"{count} TensorFlow APIs used: {len(totals['supported'])} supported, "
            f"{len(totals['difference'])} supported with documented differences, "
            f"{len(totals['unsupported'])} unsupported")
    if totals["tf2"]:
        text += f", {len(totals['tf2'])} TensorFlow 2 (tensorflow.compat.v2, TensorFlow's own)"
    unparsable = len(totals["unparsable"])
    if unparsable:
        text += f"; {unparsable} file{'s' if unparsable > 1 else ''} could not be parsed"
    return text + "."


def main(paths):
    """The `check` command: prints the report; 1 if any API is unsupported, else 0."""
    try:
        totals = check(paths)
    except FileNotFoundError as error:
        print(f"tpu_estimator_compat: {error}", file=sys.stderr)
        return 2
    return 1 if totals["unsupported"] else 0
