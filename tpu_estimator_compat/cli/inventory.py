"""TF 1.15's API (`tf115_inventory.json.gz`, made by `tools/tf1_inventory.py` from the
tensorflow-cpu 1.15.0 and tensorflow-estimator 1.15.1 wheels) walked over
`tpu_estimator_compat.v1`: which of its names the namespace serves, with the same kind
(module, class, function, other), and coverage per top module.

Walked: TF 1.15's public API (`tensorflow`, its generated `tensorflow.<module>`s,
`tensorflow.estimator`, `tensorflow.keras`), `tensorflow.contrib.*` (not their `python`
implementation packages) and the deep module paths `_paths` lists. Not walked: test helpers
(`*test_util` modules, such as `contrib.summary.summary_test_util`), `compat.v1`
(the root again), `v1` (TF 1.15's generated copy of the root, `_api/v1/v1.py`, importable by
accident), `compat.v2` (TensorFlow 2 code) and the internals of TensorFlow and
tensorflow_estimator (`loaded_internal_modules()` are compared for kinds only). `EXCLUDED`
says why each name walked but not served is not served; `KIND_DIFFERENCES` why each name
served with another kind is fine.
"""
import dataclasses
import functools
import gzip
import inspect
import json
import os
import sys
import types

INVENTORY = os.path.join(os.path.dirname(__file__), "tf115_inventory.json.gz")

# TF 1.15 paths (module prefixes or names) the namespace does not serve, and why; reviewed.
# A name below one of them that IS served is still checked for its kind.
_KERAS_DROPPED = "Keras 2.2-era names that tf_keras (Keras 2 on TensorFlow 2.21) dropped"
_ESTIMATOR_INTERNALS = ("TF 1.x's estimator modules: the names TPU programs import from them "
                        "are served (`_paths`), not their internals (imported modules, helpers)")
_CONTRIB = ("tf.contrib was removed in TensorFlow 2; this package serves the contrib modules "
            "TPU programs use (docs/compatibility.md: TF1 module paths and contrib modules)")
EXCLUDED = {
    "tensorflow.contrib": _CONTRIB,
    "tensorflow.contrib.framework": "contrib.framework's graph and tensor utilities beyond "
                                    "arg_scope, variables and checkpoints (tf-slim's)",
    "tensorflow.contrib.layers": "contrib.layers' feature columns, embeddings and summaries "
                                 "(TF1 canned-estimator helpers) beyond tf-slim's layers",
    "tensorflow.contrib.slim": "slim's names tf-slim 1.1 no longer has",
    "tensorflow.contrib.estimator": "contrib.estimator's RNN, layer-annotation, boosted-trees "
                                    "and SavedModel estimators, replicate_model_fn/"
                                    "TowerOptimizer and export helpers (the error names the "
                                    "replacement); its heads, logit functions, wrappers and "
                                    "early stopping are served",
    "tensorflow.contrib.tpu": "TF 1.x's TPU internals (keras_support, embedding, profiler "
                              "client...) that TPUEstimator programs do not reach",
    "tensorflow.contrib.training": "contrib.training's queue-based input utilities "
                                   "(bucket_by_sequence_length, SequenceQueueingStateSaver...)",
    "tensorflow.contrib.learn": "tf.contrib.learn (deprecated in TF 1.x); its downloader only",
    "tensorflow.contrib.opt": "contrib.opt's research optimizers beyond LARS, LazyAdam, "
                              "moving averages and decoupled weight decay",
    "tensorflow.contrib.rnn": "contrib's own RNN cells but LayerNormBasicLSTMCell "
                              "(LSTMBlockCell, AttentionCellWrapper...)",
    "tensorflow.contrib.crf.python.ops.crf": "the modules TF 1.x's implementation imported "
                                             "(array_ops, rnn, vs...), not API",
    "tensorflow.contrib.lookup.lookup_ops": "the modules and decorator TF 1.x's "
                                            "implementation imported (ops, dtypes, deprecated...), "
                                            "not API",
    "tensorflow.contrib.data": "contrib.data names TensorFlow dropped from tf.data",
    "tensorflow.contrib.summary.summary": "contrib.summary's SQLite writer (create_db_writer) "
                                          "and raw graph/event writers (graph, import_event), "
                                          "which TensorFlow 2's summary ops do not have",
    "tensorflow.contrib.metrics": "tf-slim's metrics lack these few contrib.metrics names",
    "tensorflow.contrib.distribute": "contrib.distribute's TF1-only strategies and step "
                                     "functions (CollectiveAllReduceStrategy, TPUStrategy, "
                                     "Monitor...); TensorFlow 2's strategies replace them",
    "tensorflow.contrib.cluster_resolver": "resolvers of other clusters (Slurm, ...) that "
                                           "TensorFlow 2.21 dropped",
    "tensorflow.python": "TensorFlow's internals, served as TensorFlow 2.21 has them (with the "
                         "TF1 names `_paths` lists): internals it dropped are not served",
    "tensorflow.python.estimator": _ESTIMATOR_INTERNALS,
    "tensorflow_estimator.python": _ESTIMATOR_INTERNALS,
    "tensorflow_estimator.contrib.estimator.python": _ESTIMATOR_INTERNALS,
    "tensorflow.estimator": "TF 1.x's BoostedTrees estimators (TensorFlow Decision Forests "
                            "replaces them); the error names the replacement",
    "tensorflow.estimator.experimental": "the estimator's experimental canned models (KMeans, "
                                         "LinearSDCA), supervised-input receivers and "
                                         "make_stop_at_checkpoint_step_hook (the "
                                         "early-stopping hooks, InMemoryEvaluatorHook and "
                                         "logit functions are served)",
    "tensorflow.pywrap_tensorflow": "TensorFlow 1.x's SWIG wrapper module (pybind modules "
                                    "since TensorFlow 2)",
    "tensorflow.config.experimental_list_devices": "removed in TensorFlow 2 "
                                                   "(tf.config.list_logical_devices)",
    "tensorflow.data.experimental": "tf.data statistics and options TensorFlow removed, and "
                                    "CheckpointInputPipelineHook, which needs MonitoredSession's "
                                    "input-iterator saving that the engine does not do",
    "tensorflow.keras.experimental": _KERAS_DROPPED,
    "tensorflow.keras.mixed_precision": _KERAS_DROPPED,
    "tensorflow.keras.utils": _KERAS_DROPPED,
    "tensorflow.keras.wrappers": _KERAS_DROPPED,
    "tensorflow.raw_ops": "TPU-embedding debug ops and CompareAndBitpack, which TensorFlow 2.21 "
                          "removed",
}
# Names served with another kind than TF 1.15's, and why that is fine; reviewed.
_CALLED_THE_SAME = "a class where TF 1.x had a function; called the same way, same result"
_OPAQUE = "a class in TF 1.x too, made by a call the static inventory cannot see through"
KIND_DIFFERENCES = {
    **{f"tensorflow.keras.initializers.{n}": _CALLED_THE_SAME
       for n in ("he_normal", "he_uniform", "lecun_normal", "lecun_uniform")},
    **{f"tensorflow.keras.regularizers.{n}": _CALLED_THE_SAME for n in ("l1", "l2")},
    "tensorflow.keras.utils.custom_object_scope": _CALLED_THE_SAME,
    "tensorflow.python.framework.ops.name_scope": "TensorFlow 2.21's internal `name_scope` is a "
                                                  "function returning the context manager",
    "tensorflow.python.framework.ops.EagerTensor": _OPAQUE,
    "tensorflow.python.ops.standard_ops.Any": _OPAQUE,
    "tensorflow.python.distribute.tpu_strategy.tf_export": "an import alias of the module, not "
                                                           "API",
    **{f"tensorflow.python.keras.initializers.{n}{v}": _CALLED_THE_SAME
       for n in ("he_normal", "he_uniform", "lecun_normal", "lecun_uniform") for v in ("", "V2")},
    **{f"tensorflow.python.keras.regularizers.{n}": _CALLED_THE_SAME for n in ("l1", "l2")},
    "tensorflow.python.keras.utils.generic_utils.custom_object_scope": _CALLED_THE_SAME,
}


@functools.lru_cache(maxsize=1)
def load():
    """`{module path: {kind letter: [names]}}` of TF 1.15."""
    with gzip.open(INVENTORY, "rt", encoding="utf-8") as f:
        return json.load(f)["modules"]


def tf1_has(module, name):
    """Whether TF 1.15's module path `module` had the attribute or submodule `name`."""
    inventory = load()
    return (f"{module}.{name}" in inventory
            or any(name in names for names in inventory.get(module, {}).values()))


def kind_of(value):
    """The kind letter of a served value."""
    if isinstance(value, types.ModuleType):
        return "m"
    if inspect.isclass(value):
        return "c"
    return "f" if callable(value) else "o"


def same_kind(tf1_kind, served_kind):
    """Whether a served value stands in for a TF 1.15 name of `tf1_kind`: the same kind, any
    for an unknown TF1 kind, and a function or value for a TF1 value (the inventory cannot
    tell a callable object from a plain value)."""
    if tf1_kind == "?":
        return True
    if tf1_kind == "o":
        return served_kind in ("f", "o")
    return tf1_kind == served_kind


def walked_modules():
    """The TF 1.15 module paths walked (see the module docstring), sorted."""
    from tpu_estimator_compat.v1 import _paths  # noqa: PLC0415
    return sorted(m for m in load() if _walked(m, relative_path(m) in _paths.MODULES))


def relative_path(module):
    """The path below the namespace of a TF 1.15 module path (`tensorflow[_estimator].x`)."""
    return module.partition(".")[2]


_NOT_WALKED = ("tensorflow.compat.v1", "tensorflow.compat.v2", "tensorflow.v1")
_INTERNAL = ("tensorflow.python", "tensorflow.core", "tensorflow.compiler", "tensorflow.tools",
             "tensorflow.examples", "tensorflow.include", "tensorflow.lite.python",
             "tensorflow.lite.toco", "tensorflow.lite.experimental")


def loaded_internal_modules():
    """TF 1.15's `tensorflow.python.*` modules that TensorFlow 2.21 has, among those loaded
    (by `import tensorflow` and the namespace): their served names are checked for kind too
    (not counted in coverage); loading the others just to check them would cost minutes."""
    return sorted(m for m in load() if m.startswith("tensorflow.python.") and m in sys.modules)


def _below(module, prefixes):
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _walked(module, listed):
    if listed or module == "tensorflow_estimator":
        return True
    if module.rpartition(".")[2].endswith("test_util"):  # test helpers (tests: not inventoried)
        return False
    if module.startswith("tensorflow_estimator."):  # its internals: `_paths`' only
        return False
    if _below(module, ("tensorflow.contrib",)):  # contrib's modules, not its implementation
        return "python" not in module.split(".")
    return not _below(module, _NOT_WALKED + _INTERNAL)


@dataclasses.dataclass
class Walk:
    """The result of walking TF 1.15's names over the namespace."""
    served: dict = dataclasses.field(default_factory=dict)  # top module -> count
    total: dict = dataclasses.field(default_factory=dict)  # top module -> count
    different: list = dataclasses.field(default_factory=list)  # (path, tf1 kind, served kind)
    missing: list = dataclasses.field(default_factory=list)  # paths


def top_module(module):
    """The module coverage is counted under: `tf` for the root, `tf.<x>`, `tf.contrib.<x>`,
    `tf.keras.<x>`, `tf.estimator.<x>`, `tensorflow_estimator` for that package's paths."""
    if module.partition(".")[0] == "tensorflow_estimator":
        return "tensorflow_estimator"
    parts = module.split(".")[1:]
    depth = 2 if parts[:1] in (["contrib"], ["keras"], ["estimator"]) else 1
    return ".".join(["tf", *parts[:depth]])


def walk(modules=None):
    """Looks every name of `modules` (default `walked_modules()`) up in the namespace: each
    module by its import path, each name as `from module import name` finds it (the
    attribute, else the submodule)."""
    inventory = load()
    result = Walk()
    for module in modules or walked_modules():
        top = top_module(module)
        served = _served(relative_path(module))
        for kind, names in inventory[module].items():
            for name in names:
                result.total[top] = result.total.get(top, 0) + 1
                value = _served_name(served, relative_path(module), name)
                if value is _NOT_SERVED:
                    result.missing.append(f"{module}.{name}")
                    continue
                result.served[top] = result.served.get(top, 0) + 1
                if not same_kind(kind, kind_of(value)):
                    result.different.append((f"{module}.{name}", kind, kind_of(value)))
    return result


_NOT_SERVED = object()


def _served(relative):
    """The module the namespace serves at import path `relative`, or None."""
    from tpu_estimator_compat.v1 import _finder  # noqa: PLC0415
    try:
        return _finder.served_module(relative)
    except Exception:  # noqa: BLE001  (not found, or a TensorFlow module failing to import)
        return None


def _served_name(module, relative, name):
    if module is None:
        return _NOT_SERVED
    try:
        return getattr(module, name)
    except Exception:  # noqa: BLE001  (whatever a lazy module raises: not an attribute)
        pass
    submodule = _served(f"{relative}.{name}" if relative else name)
    return _NOT_SERVED if submodule is None else submodule


def exclusion(path):
    """The `EXCLUDED` reason covering `path` (longest prefix), or None."""
    for prefix in sorted(EXCLUDED, key=len, reverse=True):
        if path == prefix or path.startswith(prefix + "."):
            return EXCLUDED[prefix]
    return None


def coverage(result):
    """`{top module: (names served, TF 1.15's names)}` of a `walk` result."""
    return {top: (result.served.get(top, 0), total) for top, total in sorted(result.total.items())}


def used_top_modules(api_paths):
    """The top modules (`top_module`) of TF 1.15's walked API that `api_paths` (as `check`
    reports them: `tensorflow.compat.v1.train.X`, `tensorflow.contrib.rnn`...) use."""
    walked_tops = {top_module(m) for m in walked_modules()}
    tops = set()
    for path in api_paths:
        parts = path.split(".")
        if parts[:2] == ["tensorflow_estimator", "estimator"]:  # tf.estimator's API
            parts = ["tensorflow", *parts[1:]]
        if parts[0] not in ("tensorflow", "tensorflow_estimator"):
            continue
        while parts[1:3] == ["compat", "v1"]:
            parts = parts[:1] + parts[3:]
        if parts[1:3] == ["compat", "v2"]:
            continue  # TensorFlow 2 code
        top = top_module(".".join(parts))
        while top not in walked_tops and "." in top:
            top = top.rpartition(".")[0]
        if top != "tf.python":
            tops.add(top)
    return tops


def coverage_line(api_paths):
    """`check`'s line: TF 1.15's names served, per top module the APIs use; None if none."""
    tops = used_top_modules(api_paths)
    if not tops:
        return None
    result = walk([m for m in walked_modules() if top_module(m) in tops])
    counts = ", ".join(f"{top} {served}/{total}"
                       for top, (served, total) in coverage(result).items())
    return f"TF 1.15 names served, of the modules used: {counts}."


def coverage_table(result):
    """docs/compatibility.md's table (Markdown) of a `walk()` result: TF 1.15's names served."""
    counts = coverage(result)

    def group(tops):
        served = sum(counts[t][0] for t in tops)
        total = sum(counts[t][1] for t in tops)
        short = ", ".join(f"`{t}` {counts[t][0]}/{counts[t][1]}"
                          for t in tops if counts[t][0] < counts[t][1]) if len(tops) > 1 else ""
        return f"{served}/{total}" + (f"; short of all: {short}" if short else "")

    def below(prefix):
        return [t for t in counts if t == prefix or t.startswith(prefix + ".")]

    api = [t for t in counts if t.count(".") == 1 and not t.startswith(
        ("tf.contrib", "tf.python", "tf.keras", "tf.estimator"))]
    contrib = [t for t in below("tf.contrib") if t != "tf.contrib"]
    served_contrib = [t for t in contrib if counts[t][0]]
    other_contrib = [t for t in contrib if not counts[t][0]]
    rows = [("`tf` (the root module)", group(["tf"])),
            (f"`tf.<module>` ({len(api)} modules)", group(api)),
            ("`tf.estimator(.<module>)`", group(below("tf.estimator"))),
            ("`tf.keras(.<module>)`", group(below("tf.keras"))),
            ("`tf.contrib`", group(["tf.contrib"]))]
    rows += [(f"`{t}`", group([t])) for t in served_contrib]
    rows.append((f"other `tf.contrib` modules ({len(other_contrib)})",
                 group(other_contrib).split(";")[0]))
    rows.append(("`tensorflow_estimator` paths `_paths` lists", group(["tensorflow_estimator"])))
    rows.append(("`tensorflow.python.*` paths `_paths` lists", group(["tf.python"])))
    lines = ["| TF 1.15 module | names served / TF 1.15's |", "|---|---|"]
    return "\n".join(lines + [f"| {name} | {value} |" for name, value in rows])
