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
  2.21 still has the name (those it lacks say so, but do not fail the check);
- `not-tf1` when TensorFlow 1.x did not have the name either (`tf.logging.exception`): the
  program's own error, which TF 1.x raised too. TF 1.x's API is TensorFlow's own `compat.v1`
  module tree, less the modules that lost TF 1.x names since TensorFlow 2.15 (`_CHANGED_V1`)
  and the names TF 1.15's inventory lists (`inventory.py`);
  below those, and everywhere else (contrib, `tensorflow.python`), a missing name is
  unsupported;
- `optional` for an unsupported module that the program imports only under a `try` whose
  `except` catches ImportError (and uses only through the names that import binds): the
  program handles its absence itself, as it does on TensorFlow 2;
- `conditional` for an unsupported API used only in a branch of an `if` (or of a
  conditional expression), such as `if FLAGS.quantize: tf.contrib.quantize...`: only a run
  that takes the branch fails.

A file `run` would serve TensorFlow 2 (`program_era.py`: TF 2.x-era estimator code) is checked
against `tpu_estimator_compat.v2` instead: its `tf.compat.v1`, `tf.estimator` and
`tf.keras.estimator` names as above, every other name `tf2` when TensorFlow 2.21 (or
tf_keras, for `tf.keras`) has it and unsupported when not; a line under the file's name
says so.

Only `unsupported` fails the check. A last line counts TF 1.15's names served for each top
module the program uses (`inventory.py`).
"""
import ast
import dataclasses
import importlib
import os
import sys
import types

from tpu_estimator_compat.cli import inventory
from tpu_estimator_compat.cli import program_era
from tpu_estimator_compat.cli import vendored
from tpu_estimator_compat.cli.differences import DIFFERENCE_NOTES
from tpu_estimator_compat.cli.differences import DIFFERENCES
from tpu_estimator_compat.v1 import _finder
from tpu_estimator_compat.v1 import _paths

ROOTS = ("tensorflow", "tensorflow_estimator")
DOCS = "docs/compatibility.md"
_TF2 = "compat.v2"
# TF2 code's `tf.keras.estimator` is this package's (v1's), not tf_keras' (which needs
# tensorflow_estimator): judged as the v1 namespace's.
_TF2_KERAS_ESTIMATOR = ["keras", "estimator"]

# Modules of TensorFlow 1.x's API (`tf.compat.v1.<path>`) that lost names between
# TensorFlow 2.15 (the last release with tf.estimator; its compat.v1 is TF 1.x's API without
# contrib) and 2.21, found by listing both versions' `tf.compat.v1` trees: below these, a name
# TensorFlow 2.21 lacks may have been TF 1.x API.
_CHANGED_V1 = ("data.experimental", "estimator", "keras", "layers", "nn.rnn_cell",
               "tpu.experimental")
# TensorFlow's generated TF1 API modules (named either way, depending on how TF was imported).
_TF_V1_API = ("tensorflow._api.v2.compat.v1", "tensorflow.compat.v1")
# What catches a failing import: `except ImportError` and its bases.
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_MAIN_GUARD = ast.dump(ast.parse('__name__ == "__main__"', mode="eval").body)
_SKIPPED_DIRS = {".git", "__pycache__", ".venv", "venv", "site-packages", "node_modules"}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """How the namespace serves one API: `status` is 'supported', 'difference',
    'unsupported', 'tf2', 'not-tf1', 'optional' or 'conditional'; `detail` is the anchor in
    DOCS or the reason; `note` the difference in one line."""
    api: str
    status: str
    detail: str = ""
    note: str = ""


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
                if _not_in_tf1(_v1_relative(walked), part):
                    return Verdict(api, "not-tf1", f"TensorFlow 1.x did not have it either "
                                   f"(the program's own error, raised there too): {error}")
                return Verdict(api, "unsupported", str(error))
            walked.append(part)
        api = ".".join(walked)
        if tf2:
            return Verdict(api, "tf2")
        relative = _v1_relative(walked)
        for key, anchor in DIFFERENCES.items():
            if relative == key or relative.startswith(key + "."):
                return Verdict(api, "difference", anchor, DIFFERENCE_NOTES[key])
        key = self._differences_by_identity().get(id(value))
        if key is not None and not isinstance(value, types.ModuleType):
            return Verdict(api, "difference", DIFFERENCES[key], DIFFERENCE_NOTES[key])
        return Verdict(api, "supported")

    def tf2_verdict(self, path):
        """The verdict of `path` used by TensorFlow 2 code (served `tpu_estimator_compat.v2`)."""
        parts = path.split(".")
        if parts[0] != "tensorflow" or parts[1:3] in (["compat", "v1"], _TF2_KERAS_ESTIMATOR) or (
                parts[1:2] == ["estimator"] and parts[2:3] != [] and hasattr(
                    importlib.import_module("tpu_estimator_compat.v2.estimator"), parts[2])):
            return self.verdict(path)
        value = importlib.import_module("tpu_estimator_compat.v2")
        for index, part in enumerate(parts[1:], start=1):
            if not isinstance(value, types.ModuleType):
                break
            try:
                value = getattr(value, part)
            except AttributeError as error:
                api = ".".join(parts[:index + 1])
                return Verdict(api, "unsupported", _tf2_missing(api, error))
        return Verdict(path, "tf2")

    def _differences_by_identity(self):
        if self._difference_ids is None:
            self._difference_ids = {id(lookup(key)): key for key in DIFFERENCES}
        return self._difference_ids


def _not_in_tf1(parent, name):
    """Whether TF 1.x's API had a module at `parent` (v1-relative) without `name` in it."""
    path = f"{parent}.{name}" if parent else name
    if any(path == m or path.startswith(m + ".") for m in _CHANGED_V1):
        return False
    if inventory.tf1_has(f"tensorflow.{parent}" if parent else "tensorflow", name):
        return False  # TF 1.15 had it (TensorFlow 2.15 dropped it)
    import tensorflow as tf  # noqa: PLC0415  (imported already, by the namespace)
    module = tf.compat.v1
    for part in filter(None, parent.split(".")):
        module = getattr(module, part, None)
    module_name = getattr(module, "__name__", "") if isinstance(module, types.ModuleType) else ""
    return (any(module_name == api or module_name.startswith(api + ".") for api in _TF_V1_API)
            and not hasattr(module, name))


def _tf2_missing(api, error):
    import tensorflow as tf  # noqa: PLC0415  (imported already, by the namespace)
    text = f"not in TensorFlow {tf.__version__} ({error})"
    if ".keras." in api + ".":
        text += ("; tf.keras is Keras 3 there: Keras 2 names are tf_keras's, which "
                 "TF_USE_LEGACY_KERAS=1 makes tf.keras")
    return text


def _step(module, relative_path):
    """What the namespace serves at `relative_path`, one name below `module` (served at the
    path's parent), looked up as the import system does: listed paths first (`_paths`) unless
    the parent's entry serves that name (TF1's star imports), then the attribute, then a
    submodule."""
    parent, _, name = relative_path.rpartition(".")
    parent_entry = _paths.MODULES.get(parent)
    shadowed = isinstance(parent_entry, _paths.Virtual) and name in parent_entry.names
    if relative_path in _paths.MODULES and not shadowed:
        return _finder.served_module(relative_path)
    try:
        return getattr(module, name)
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
    """Every TF API path used in one module, with its first line (`uses`); those used at
    least once neither under an import guard (an import in the body of a `try` catching
    ImportError, or a name bound by such an import) nor under a condition (`required`); and
    those used at least once under a condition only (`conditional`: in a branch of an `if` or
    of a conditional expression)."""

    def __init__(self):
        self.aliases = {}
        self.guarded_aliases = set()
        self.uses = {}
        self.required = set()
        self.conditional = set()
        self.fallbacks = {}
        self._guards = 0
        self._conditions = 0
        self._guarded_uses = []
        self._replaced = None

    def _use(self, path, line, guarded):
        if "." in path:
            self.uses.setdefault(path, line)
            if self._guards:
                self._guarded_uses.append(path)
            if self._replaced and not guarded:  # a fallback: runs if the `try` failed
                self.fallbacks.setdefault(path, set()).update(self._replaced)
            elif not guarded:
                (self.conditional if self._conditions else self.required).add(path)

    def visit_If(self, node):  # noqa: N802
        self.visit(node.test)
        main = ast.dump(node.test) == _MAIN_GUARD  # its body runs whenever the program does
        self._conditions += not main
        for statement in node.body:
            self.visit(statement)
        self._conditions += main
        for statement in node.orelse:
            self.visit(statement)
        self._conditions -= 1

    def visit_IfExp(self, node):  # noqa: N802
        self.visit(node.test)
        self._conditions += 1
        self.visit(node.body)
        self.visit(node.orelse)
        self._conditions -= 1

    def _bind(self, name, path, guarded):
        self.aliases[name] = path
        if guarded:
            self.guarded_aliases.add(name)
        else:
            self.guarded_aliases.discard(name)

    def visit_Try(self, node):  # noqa: N802
        """A `try` catching ImportError guards the imports of its body; what its handlers use
        is a fallback (`fallbacks`: path -> the guarded uses it replaces), run only when one
        of those failed."""
        guards = any(_catches_import_error(handler.type) for handler in node.handlers)
        self._guards += guards
        start = len(self._guarded_uses)
        for statement in node.body:
            self.visit(statement)
        self._guards -= guards
        bound = (dict(self.aliases), set(self.guarded_aliases))
        replaced, self._replaced = self._replaced, (
            set(self._guarded_uses[start:]) if guards else self._replaced)
        for statement in node.handlers:
            self.visit(statement)
        self._replaced = replaced
        if guards:  # after the `try`, a name both bind is the body's (the fallback's if it ran)
            for name, path in bound[0].items():
                if self.aliases.get(name) != path:
                    self._bind(name, path, name in bound[1])
        for statement in node.orelse + node.finalbody:
            self.visit(statement)

    def visit_FunctionDef(self, node):  # noqa: N802
        for expression in node.decorator_list + [node.args, node.returns]:
            if expression is not None:  # evaluated where the function is defined
                self.visit(expression)
        guards, self._guards = self._guards, 0  # its body runs later, outside the `try`
        self._visit_local_scope(node.args, node.body)
        self._guards = guards

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_Lambda(self, node):  # noqa: N802
        self.visit(node.args)
        self._visit_local_scope(node.args, [node.body])

    def _visit_local_scope(self, arguments, body):
        """Visits a function's body, where its parameters shadow imported names (`def
        f(flags): flags.model_dir` reads the argument, not `tensorflow...flags`) and its
        own assignments stay local."""
        aliases, guarded = dict(self.aliases), set(self.guarded_aliases)
        parameters = arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [
            a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        for parameter in parameters:
            self.aliases.pop(parameter.arg, None)
        for statement in body:
            self.visit(statement)
        self.aliases, self.guarded_aliases = aliases, guarded

    def visit_Import(self, node):  # noqa: N802
        for alias in node.names:
            root = alias.name.partition(".")[0]
            if root in ROOTS:
                self._bind(alias.asname or root, alias.name if alias.asname else root,
                           self._guards > 0)
                self._use(alias.name, node.lineno, self._guards > 0)

    def visit_ImportFrom(self, node):  # noqa: N802
        if node.level or not node.module or node.module.partition(".")[0] not in ROOTS:
            return
        for alias in node.names:
            if alias.name == "*":
                self._use(node.module, node.lineno, self._guards > 0)
                continue
            path = f"{node.module}.{alias.name}"
            self._bind(alias.asname or alias.name, path, self._guards > 0)
            self._use(path, node.lineno, self._guards > 0)

    def _path(self, node):
        """(TF path, guarded) of an expression (Name or attribute chain), or (None, False)."""
        attributes = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return (".".join([self.aliases[node.id]] + attributes[::-1]),
                    node.id in self.guarded_aliases)
        return None, False

    def visit_Attribute(self, node):  # noqa: N802
        path, guarded = self._path(node)
        if path is None:
            self.generic_visit(node)
        else:
            self._use(path, node.lineno, guarded)

    def visit_Assign(self, node):  # noqa: N802
        self.generic_visit(node)
        path, guarded = self._path(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if path is None:
                    self.aliases.pop(target.id, None)
                    self.guarded_aliases.discard(target.id)
                else:
                    self._bind(target.id, path, guarded)


def _catches_import_error(handler_type):
    """Whether an `except` clause of this type catches ImportError."""
    if handler_type is None:
        return True
    types_ = handler_type.elts if isinstance(handler_type, ast.Tuple) else [handler_type]
    return any(isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS for t in types_)


def _collect(source, filename):
    """`(tree, collector)`: `source` parsed once, and the TF names the collector found in it."""
    tree = ast.parse(source, filename)
    collector = _Collector()
    collector.visit(tree)
    return tree, collector


def uses_in_source(source, filename="<source>"):
    """`{api path: first line}` of the TF names used in Python `source`.

    Raises:
      SyntaxError: `source` does not parse.
    """
    return _collect(source, filename)[1].uses


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


def check(paths, out=sys.stdout, resolver=None, problems_only=False):
    """Prints the report for `paths` (`problems_only`: its unsupported APIs and unparsable
    files only, and the summary); returns `{status: set of APIs}` (with 'unparsable')."""
    resolver = resolver or Resolver()
    totals = {status: set() for status in _LABELS} | {"unparsable": set()}
    for filename in python_files(paths):
        with open(filename, encoding="utf-8", errors="replace") as f:
            source = f.read()
        try:
            tree, collector = _collect(source, filename)
        except SyntaxError as error:
            print(f"{filename}\n  cannot parse ({error.msg}, line {error.lineno}): not checked",
                  file=out)
            totals["unparsable"].add(filename)
            continue
        tf2 = program_era.era_of_uses(tree, collector.uses).tf2
        verdicts, required, conditional = {}, set(), set()
        judge = resolver.tf2_verdict if tf2 else resolver.verdict
        for path, line in collector.uses.items():
            verdict = judge(path)
            verdicts.setdefault(verdict, line)
            # a fallback runs only when an import it replaces is unsupported
            if path in collector.required or any(
                    judge(p).status == "unsupported" for p in collector.fallbacks.get(path, ())):
                required.add(verdict)
            if path in collector.conditional:
                conditional.add(verdict)
        verdicts = {_not_required(v, v in conditional)
                    if v.status == "unsupported" and v not in required else v: line
                    for v, line in verdicts.items()}
        for verdict in verdicts:
            totals[verdict.status].add(verdict.api)
        shown = sorted(((verdict, line) for verdict, line in verdicts.items()
                        if not problems_only or verdict.status == "unsupported"),
                       key=lambda item: item[1])
        unsupported = any(verdict.status == "unsupported" for verdict in verdicts)
        copied = vendored.copied_classes(source) if unsupported else ()
        if shown:
            print(filename, file=out)
            if tf2:
                print("  TensorFlow 2 code: `run` serves its `import tensorflow` "
                      "tpu_estimator_compat.v2 (TensorFlow 2 with tf.estimator); see "
                      "docs/cli.md", file=out)
            if copied:
                print(f"  {vendored.note(filename, copied)}", file=out)
        for verdict, line in shown:
            print(f"  {_line(verdict, line)}", file=out)
    print(_summary(totals), file=out)
    coverage = inventory.coverage_line(set().union(*(totals[status] for status in _LABELS)))
    if coverage:
        print(coverage, file=out)
    return totals


_LABELS = {"supported": "supported", "difference": "difference", "unsupported": "UNSUPPORTED",
           "tf2": "TF2", "not-tf1": "not-in-TF1", "optional": "optional",
           "conditional": "conditional"}


def _not_required(verdict, conditional):
    """The verdict of an unsupported API the program may never reach: `conditional` if used
    under a condition (a flag the run may not set), else `optional` (under an import guard)."""
    if conditional:
        return Verdict(verdict.api, "conditional", "used only under a condition (an `if` "
                       "branch): fails only in a run that takes it; unsupported: "
                       f"{verdict.detail}")
    return Verdict(verdict.api, "optional", "imported only under `except ImportError`, which "
                   f"the program handles; unsupported: {verdict.detail}")


def _line(verdict, line):
    text = f"{_LABELS[verdict.status]:<12} {verdict.api}  (line {line})"
    if verdict.status == "difference":
        return f"{text}: {verdict.note}; see {DOCS}#{verdict.detail}"
    if verdict.detail:
        return f"{text}: {verdict.detail}"
    return text


def _summary(totals):
    count = len(set().union(*(totals[status] for status in _LABELS)))
    text = (f"{count} TensorFlow APIs used: {len(totals['supported'])} supported, "
            f"{len(totals['difference'])} supported with documented differences, "
            f"{len(totals['unsupported'])} unsupported")
    if totals["optional"]:
        text += (f" (+{len(totals['optional'])} imported only under `except ImportError`, "
                 "which the program handles)")
    if totals["conditional"]:
        text += (f" (+{len(totals['conditional'])} unsupported used only under a condition, "
                 "which fail only in a run that takes it)")
    if totals["not-tf1"]:
        text += f", {len(totals['not-tf1'])} not in TensorFlow 1.x (the program's own errors)"
    if totals["tf2"]:
        text += (f", {len(totals['tf2'])} TensorFlow 2 (TensorFlow's own: tensorflow.compat.v2, "
                 "or TF2 code's names)")
    unparsable = len(totals["unparsable"])
    if unparsable:
        text += f"; {unparsable} file{'s' if unparsable > 1 else ''} could not be parsed"
    return text + "."


def main(paths, problems_only=False):
    """The `check` command: prints the report (`problems_only`: only the unsupported APIs and
    the files that do not parse, and the summary); 1 if any API is unsupported, else 0."""
    try:
        totals = check(paths, problems_only=problems_only)
    except FileNotFoundError as error:
        print(f"tpu_estimator_compat: {error}", file=sys.stderr)
        return 2
    return 1 if totals["unsupported"] else 0
