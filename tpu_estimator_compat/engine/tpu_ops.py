"""What a TPU compiles, checked on the simulated TPU before the first step.

The simulated TPU compiles the step with XLA's CPU backend, which takes dtypes a TPU's does
not (complex128), and would meet an op without any XLA kernel (`tf.py_function`, string
ops) only when the first loop compiles. So each compiled program's ops are checked once,
when it is traced, against the TPU's own XLA kernels: `tpu_ops.json`, TensorFlow's XLA op
registrations as the XLA_TPU_JIT backend gets them (made by `tools/tpu_ops.py`, which
names the source). Checked: every op `xla_step` compiles (not outside_compilation's, the
collectives, summary writes or the host's ops), and the ops of the functions they call (a
`tf.cond`'s branches, a loop's body) but those marked for outside compilation. An op the
TPU has no kernel for, or whose dtypes its kernel does not take, fails `train`/`evaluate`/
`predict` before the first step, naming the op, the line of the user's code that built it
and the fixes. Ops TensorFlow compiles for a TPU pass, data-dependent shapes (`tf.unique`,
`tf.where`: bounded dynamic shapes) and float64 (emulated on a TPU: logged) included.
"""
import functools
import json
import os
import re
import sysconfig

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.engine import xla_step
from tpu_estimator_compat.engine.runtime import SIMULATED_TPU_XLA_ENV
from tpu_estimator_compat.tf_internals import xla as tf_xla

_DATA = os.path.join(os.path.dirname(__file__), "tpu_ops.json")
_STEPS = {ModeKeys.TRAIN: "training", ModeKeys.EVAL: "evaluation",
          ModeKeys.PREDICT: "prediction"}
_REPLICA_SCOPE = re.compile(r"(^|/)replica_\d+/")
_LISTED = 10  # ops named in the error; the others are counted


class TPUUnsupportedOpError(tf.errors.InvalidArgumentError):
    """The step has an op a TPU cannot compile (checked on the simulated TPU)."""

    def __init__(self, message):
        super().__init__(None, None, message)


class _Registry:
    """`tpu_ops.json`'s ops and the dtypes each type attribute takes."""

    def __init__(self):
        with open(_DATA, encoding="utf-8") as f:
            content = json.load(f)
        sets = [frozenset(names) for names in content["dtype_sets"]]
        self.tensorflow = content["tensorflow"]
        self.ops = {op: [{attr: sets[i] for attr, i in registration.items()}
                         for registration in registrations]
                    for op, registrations in content["ops"].items()}

    def refusal(self, node_def):
        """Why a TPU cannot compile `node_def` (a NodeDef), or None if it can."""
        registrations = self.ops.get(node_def.op)
        if registrations is None:
            return "a TPU has no XLA kernel for it"
        for registration in registrations:
            wrong = [(attr, dtype) for attr, allowed in registration.items()
                     for dtype in _dtypes(node_def.attr.get(attr)) if dtype not in allowed]
            if not wrong:
                return None
        return "a TPU's XLA kernel for it takes no " + ", ".join(
            f"{attr}={dtype}" for attr, dtype in wrong)


@functools.cache
def _registry():
    return _Registry()


def refusal(node_def):
    """Why a TPU cannot compile `node_def` (a NodeDef), or None if it can."""
    return _registry().refusal(node_def)


def check(step, devices, mode):
    """Raises TPUUnsupportedOpError if an op `step` (a StepGraph) compiles on `devices`
    (the replicas') is one a TPU cannot compile; logs a warning for float64 ops."""
    registry = _registry()
    ops = [op for op in step.pruned_ops if op.type != "Placeholder"]  # inputs and captures
    compiled = [op for unit, device in xla_step.units(step.graph, ops, devices)
                if device is not None for op in unit]
    refused, float64, functions = {}, set(), {}
    for op in compiled:
        name = _REPLICA_SCOPE.sub(r"\1", op.name)
        node_def = op.node_def
        reason = registry.refusal(node_def)
        if reason is not None:
            _refuse(refused, (op.type, name, None, reason), op)
        for node in _called_nodes(node_def, step.graph, functions):
            reason = registry.refusal(node)
            if reason is not None:
                _refuse(refused, (node.op, _REPLICA_SCOPE.sub(r"\1", node.name), name,
                                  reason), op)
        if any(t.dtype == tf.float64 for t in op.outputs):
            float64.add(name)
    if refused:
        raise TPUUnsupportedOpError(_message(refused, mode, registry.tensorflow))
    if float64:
        logging.warning(
            "The %s step computes in float64 (%s): a TPU compiles it but has no float64 "
            "hardware, so XLA emulates it there (slowly; some float64 ops fail to compile). "
            "Compute in float32 on the TPU.", _STEPS.get(mode, mode),
            ", ".join(repr(n) for n in sorted(float64)[:_LISTED]))


def _dtypes(value):
    """The dtype names an AttrValue holds (none for attributes of other kinds)."""
    if value is None:
        return []
    if value.HasField("type"):
        return [tf.dtypes.as_dtype(value.type).name]
    if value.HasField("list"):
        return [tf.dtypes.as_dtype(t).name for t in value.list.type]
    return []


def _called_nodes(node_def, graph, seen):
    """The NodeDefs of the functions `node_def` calls, at any depth, but those marked for
    outside compilation; `seen` memoizes by function name."""
    for value in node_def.attr.values():
        names = [value.func.name] if value.HasField("func") else (
            [f.name for f in value.list.func] if value.HasField("list") else [])
        for name in names:
            if name not in seen:
                seen[name] = []  # (recursion guard)
                function = tf_xla.graph_function(graph, name)
                for node in [] if function is None else function.definition.node_def:
                    if tf_xla.OUTSIDE_COMPILATION_ATTRIBUTE not in node.attr:
                        seen[name].append(node)
                        seen[name].extend(_called_nodes(node, graph, seen))
            yield from seen[name]


_LIBRARIES = tuple(os.path.realpath(p) + os.sep for p in {
    sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    | {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})


def _refuse(refused, key, op):
    """Records `key` in `refused` with where `op` was built (a replica's op copied from
    replica 0's has no traceback: replica 0's gives it)."""
    if refused.get(key) is None:
        refused[key] = _built_at(op)


def _built_at(op):
    """'file:line (function)' of the innermost frame of the user's code that built `op`
    (not TensorFlow's, this package's or another installed library's), or None."""
    for frame in reversed(op.traceback or ()):
        if not os.path.realpath(frame.filename).startswith(_LIBRARIES):
            return f"{frame.filename}:{frame.lineno} ({frame.name})"
    return None


def _message(refused, mode, tensorflow_version):
    lines = [f"  {op_type} (op {name!r}"
             f"{f' in a function called by op {caller!r}' if caller else ''}"
             f"{', built at ' + at if at else ''}): {reason}"
             for (op_type, name, caller, reason), at in refused.items()]  # in graph order
    if len(lines) > _LISTED:
        lines[_LISTED:] = [f"  ... and {len(lines) - _LISTED} more"]
    return (
        f"A TPU cannot compile {len(refused)} op(s) of the {_STEPS.get(mode, mode)} step "
        f"(the simulated TPU checks the step against the TPU's XLA kernels, TensorFlow "
        f"{tensorflow_version}'s registrations for XLA_TPU_JIT):\n" + "\n".join(lines) +
        "\nA TPU compiles the step with XLA, and so does the simulated TPU. Run such an op on "
        "the host: build it in model_fn with tf.tpu.outside_compilation(fn, *args) "
        "(tf.compat.v1.tpu.outside_compilation), or compute it in host_call (training) or "
        "eval_metrics' metric_fn (evaluation), which run on the host; or give it a dtype "
        f"the TPU takes. {SIMULATED_TPU_XLA_ENV}=0 runs the simulated TPU without XLA and "
        "without this check.")
