"""The values of `EstimatorSpec.eval_metric_ops`, as TF1's evaluation reported them.

TF1's Estimator ran each metric's update op at every step and its value op once after the
last step. The device loop returns one value per step instead, so the step outputs each
metric's value op ordered after that step's update: at the last step, the final value. In
the step's TF1 graph a read with no dependency on an update sees the step's start value
(`step_graph.py`), so the value op's variable reads are made to depend on the update op.

Where that cannot be done (a read the update itself needs, a value op reading no
variable), the update op's own result is reported, which for every `tf.compat.v1.metrics`
function but `mean_iou` and `mean_per_class_accuracy` is the same number.
"""
import tensorflow as tf

from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.tf_internals import graphs


def value_after_update(name, value_op, update_op):
    """The tensor to report for metric `name`: its value op after the step's update."""
    update = spec_lib.metric_tensor(update_op)
    if not isinstance(update, tf.Tensor):
        raise TypeError(
            f"eval_metric_ops[{name!r}]: the update op is a {type(update).__name__}; "
            "tpu_estimator_compat needs update ops that return the updated value, as every "
            "tf.compat.v1.metrics function does. Return eval_metrics=(metric_fn, tensors) "
            "from a TPUEstimatorSpec instead.")
    value = spec_lib.metric_tensor(value_op)
    if not isinstance(value, tf.Tensor) or value.graph is not update.graph:
        return update
    update_ancestors = _ancestors(update.op)
    if value.op in update_ancestors:
        return update  # the value is part of the update's computation
    if update.op in _ancestors(value.op):
        return value  # already computed after the update
    reads = [op for op in _ancestors(value.op, stop_at_reads=True)
             if op.type in graphs.RESOURCE_READ_OPS]
    if not reads or any(read in update_ancestors for read in reads):
        return update
    for read in reads:
        graphs.add_control_input(read, update.op)
    return value


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
