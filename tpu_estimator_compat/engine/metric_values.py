"""The values of `EstimatorSpec.eval_metric_ops`, as TF1's evaluation reported them.

TF1's Estimator ran each metric's update op at every step and its value op once after the
last step. The device loop returns one value per step instead, so the step outputs each
metric's value op ordered after that step's update: at the last step, the final value. In
the step's TF1 graph a read with no dependency on an update sees the step's start value
(`step_graph.py`), so the value op's variable reads are made to depend on the update op.

Where that cannot be done (a read the update itself needs, a value op reading no
variable), the update op's own result is reported, which for every `tf.compat.v1.metrics`
function but `mean_iou` and `mean_per_class_accuracy` is the same number; an update op
that is an Operation (`tf.group(...)`) has none, and is refused there.
"""
import tensorflow as tf

from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.tf_internals import graphs


def value_after_update(name, value_op, update_op):
    """The tensor to report for metric `name`: its value op after the step's update. An
    update op that is an Operation (`tf.group` of updates, as BLEURT's streaming_concat
    metrics) returns nothing to report: the value op must be ordered after it."""
    update = spec_lib.metric_tensor(update_op)
    if not isinstance(update, (tf.Tensor, tf.Operation)):
        raise TypeError(f"eval_metric_ops[{name!r}]: the update op is a "
                        f"{type(update).__name__}, not a Tensor or an Operation.")
    update_op = update.op if isinstance(update, tf.Tensor) else update
    value = spec_lib.metric_tensor(value_op)
    ordered = _ordered_after(value, update_op)
    if ordered is not None:
        return ordered
    if isinstance(update, tf.Tensor):
        return update
    if isinstance(value, tf.Tensor) and value.graph is update_op.graph and not _reads(value):
        with value.graph.as_default(), tf.control_dependencies([update_op]):
            return tf.identity(value)  # the same number whenever computed; the update runs
    raise TypeError(
        f"eval_metric_ops[{name!r}]: the update op is an Operation and the value op cannot "
        "be computed after it (the update reads the variables the value reads); "
        "tpu_estimator_compat reports each metric's value after the last step's update. "
        "Return the update as a tensor (the updated value), as every tf.compat.v1.metrics "
        "function does.")


def _ordered_after(value, update_op):
    """`value`, made to be computed after `update_op` where it is not already, or None
    where that cannot be done (a value `update_op` computes itself, a read the update
    itself needs, a value reading no variable)."""
    if not isinstance(value, tf.Tensor) or value.graph is not update_op.graph:
        return None
    update_ancestors = _ancestors(update_op)
    if value.op in update_ancestors:
        return None  # the value is part of the update's computation
    if update_op in _ancestors(value.op):
        return value  # already computed after the update
    reads = _reads(value)
    if not reads or any(read in update_ancestors for read in reads):
        return None
    for read in reads:
        graphs.add_control_input(read, update_op)
    return value


def _reads(value):
    """The variable reads `value` is computed from (not those inside other reads' inputs)."""
    return [op for op in _ancestors(value.op, stop_at_reads=True)
            if op.type in graphs.RESOURCE_READ_OPS]


def _ancestors(op, stop_at_reads=False):
    """`op` and every op it depends on through data or control inputs (with
    `stop_at_reads`, a variable read's own inputs are not followed)."""
    seen, pending = {op}, [op]
    while pending:
        current = pending.pop()
        if stop_at_reads and current.type in graphs.RESOURCE_READ_OPS:
            continue
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                pending.append(parent)
    return seen
