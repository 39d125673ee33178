"""The device loops: `tf.function`s that run many steps per host round trip.

`make_step_body` runs one `strategy.run` of the replica function and returns the host's
view of the outputs (replica 0's loss; batch tensors concatenated across replicas). The
engine traces it once, TF1-style (`step_graph.StepGraph`), which creates the model's
variables and tells the structure of the outputs; the loops then copy the pruned step into
the body of a `tf.while_loop` (`step(element)` below is `StepGraph.instantiate`):

    train_loop(iterator, n):      n x step(next(iterator))                 -> last loss, host_call tensors per step,
                                                                              whether every local replica's loss was finite at every step
    inference_loop(iterator, n):  step(next(iterator)) until n or all stop -> outputs per step

Both also return the hooks' fetches (`hook_fetches`, see `hooks.py`): replica 0's values from
the last step (inference: the last step where replica 0 had real examples).
"""
import tensorflow as tf

from tpu_estimator_compat.tf1 import patches as legacy_patches
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.engine import step_graph

_BATCH_OUTPUTS = ("host_call", "metrics", "predictions", "mask", "stop")
_SCALAR_OUTPUTS = ("loss", "loss_has_real_rows", "metric_updates")


def make_step_body(strategy, store, replica_fn, init_from_checkpoint_calls, kept_alive,
                   after_replicas):
    """The Python function of one step on every replica; see the module docstring.

    `after_replicas()` is called after the replicas' calls, in cross-replica context;
    `init_from_checkpoint_calls` and `kept_alive` are `legacy_patches.patched_legacy_api`'s.
    """
    def replica_step(element):
        with step_graph.building_replica(), store.creating_variables_in_replica():
            store.prepare_graph()  # each replica has its own collections
            return replica_fn(element)

    def step(element):
        store.prepare_graph()
        with legacy_patches.patched_legacy_api(init_from_checkpoint_calls, kept_alive):
            per_replica = strategy.run(replica_step, args=(element,))
            after_replicas()
        return _host_view(strategy, per_replica)
    return step


def _host_view(strategy, per_replica):
    # Evaluation on several workers: every worker gets global replica 0's scalars (so all
    # return the same results); elsewhere replica 0 is local. Training broadcasts its loss
    # once per loop instead (training.py), not once per step.
    inference = "mask" in per_replica
    first = (_global_first_replica if inference and runtime_lib.is_between_graph(strategy)
             else _local_first_replica)
    view = {}
    # Replica 0's scalars, fetched only once every replica computed its own (the loss waits
    # for the replica's train op, a metric value for its update), as TF1 ran all replicas.
    scalars = [per_replica.get("loss"), per_replica.get("metric_updates", {})]
    replicas_done = tf.group([strategy.experimental_local_results(v)
                              for v in tf.nest.flatten(scalars) if v is not None])
    for key, value in per_replica.items():
        if key in ("loss", "metric_updates"):
            with tf.control_dependencies([replicas_done]):
                view[key] = tf.nest.map_structure(
                    lambda v: tf.identity(first(strategy, v)), value)
        elif key == "hook_fetches":  # this worker's first replica: hooks run on every worker
            view[key] = tf.nest.map_structure(
                lambda v: _local_first_replica(strategy, v), value)
        elif key in _BATCH_OUTPUTS:
            view[key] = tf.nest.map_structure(
                lambda v, key=key: _gather(strategy, v, key), value)
    if not inference:  # no collective: this worker's replicas, AND-ed over the loop
        view["loss_finite"] = _all_local_finite(strategy, per_replica["loss"])
    if inference:  # whether replica 0 had data
        if first is _local_first_replica:
            local_mask = _local_first_replica(strategy, per_replica["mask"])
            view["loss_has_real_rows"] = tf.reduce_any(local_mask > 0)
        else:
            has_rows = strategy.run(  # int32: the cross-replica gather has no bool kernel
                lambda mask: tf.cast(tf.reduce_any(mask > 0), tf.int32),
                args=(per_replica["mask"],))
            view["loss_has_real_rows"] = first(strategy, has_rows) > 0
        view["stop"] = tf.reduce_all(view["stop"] > 0)
    return view


def _local_first_replica(strategy, value):
    return strategy.experimental_local_results(value)[0]


def _all_local_finite(strategy, value):
    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(v))
                                   for v in strategy.experimental_local_results(value)]))


def _global_first_replica(strategy, value):
    """Replica 0's value on every worker (one all-gather): replica 0 is on the chief."""
    rows = strategy.run(lambda v: tf.expand_dims(v, 0), args=(value,))
    return strategy.gather(rows, axis=0)[0]


def _gather(strategy, value, key):
    first = strategy.experimental_local_results(value)[0]
    if first.shape.rank == 0:
        raise RuntimeError(
            "All tensors outfed from TPU should preserve batch size dimension, but got "
            f"scalar {first} (in {key}). Reshape it to [1] (tf.reshape(x, [1])); the host "
            "receives it concatenated across replicas.")
    return strategy.gather(value, axis=0)


def make_train_loop(step_fn, step_outputs):
    """`train_loop(iterator, num_steps) -> (last loss, {'host_call': stacked per step},
    last step's hook fetches, whether every local replica's loss was finite at every step)`."""
    host_call_spec = step_outputs.get("host_call", {})
    hook_spec = step_outputs.get("hook_fetches", {})

    @tf.function(autograph=False)
    def train_loop(iterator, num_steps):
        arrays = _tensor_arrays(host_call_spec)

        def body(i, loss, finite, arrays, hook_values):
            outputs = step_fn(next(iterator))
            arrays = _write(arrays, i, outputs.get("host_call", {}))
            finite = tf.logical_and(finite, outputs["loss_finite"])
            return i + 1, outputs["loss"], finite, arrays, outputs.get("hook_fetches", {})

        loop_vars = (tf.constant(0), tf.zeros([], step_outputs["loss"].dtype), tf.constant(True),
                     arrays, _initial_values(hook_spec))
        _, loss, finite, arrays, hook_values = tf.while_loop(
            lambda i, *_: i < num_steps, body, loop_vars,
            shape_invariants=_shape_invariants(loop_vars, hook_spec))
        return loss, _stack(arrays), hook_values, finite

    return train_loop


def make_inference_loop(step_fn, step_outputs):
    """`loop(iterator, max_steps) -> (scalars stacked per step, batch outputs, rows per step,
    hook fetches)`.

    Stops after `max_steps` or at the first step where every replica got a stop batch.
    Batch outputs may change size from step to step (the final partial batch on CPU/GPU), so
    they are concatenated, with each step's row count to split them again on the host.
    """
    # `stop` per step too: with max_steps=1 a loop that ran its one step may have stopped.
    scalar_spec = {k: step_outputs[k] for k in _SCALAR_OUTPUTS + ("stop",)
                   if k in step_outputs}
    batch_spec = {k: v for k, v in step_outputs.items() if k in _BATCH_OUTPUTS and k != "stop"}
    hook_spec = step_outputs.get("hook_fetches", {})

    @tf.function(autograph=False)
    def inference_loop(iterator, max_steps):
        scalars = _tensor_arrays(scalar_spec)
        batches = _tensor_arrays(batch_spec, infer_shape=False)
        rows = _tensor_arrays(batch_spec, dtype=tf.int32)

        def body(i, stopped, scalars, batches, rows, hook_values):
            outputs = step_fn(next(iterator))
            scalars = _write(scalars, i, {k: outputs[k] for k in scalar_spec})
            step_batches = {k: outputs[k] for k in batch_spec}
            batches = _write(batches, i, step_batches)
            rows = _write(rows, i, tf.nest.map_structure(lambda t: tf.shape(t)[0], step_batches))
            if hook_spec:  # keep the values of the last step where replica 0 had examples
                new_values = outputs["hook_fetches"]
                hook_values = tf.cond(outputs["loss_has_real_rows"], lambda: new_values,
                                      lambda: hook_values)
            return i + 1, outputs["stop"], scalars, batches, rows, hook_values

        loop_vars = (tf.constant(0), tf.constant(False), scalars, batches, rows,
                     _initial_values(hook_spec))
        _, _, scalars, batches, rows, hook_values = tf.while_loop(
            lambda i, stopped, *_: tf.logical_and(i < max_steps, tf.logical_not(stopped)),
            body, loop_vars, shape_invariants=_shape_invariants(loop_vars, hook_spec))
        return (_stack(scalars), tf.nest.map_structure(lambda a: a.concat(), batches),
                _stack(rows), hook_values)

    return inference_loop


def _initial_values(spec):
    """Zeros shaped like `spec` (unknown dimensions 0): the hook values before any step."""
    return tf.nest.map_structure(
        lambda t: tf.zeros([d or 0 for d in t.shape.as_list()] if t.shape.rank is not None
                           else [], t.dtype), spec)


def _shape_invariants(loop_vars, hook_spec):
    """None (the default) without hooks; else the hook values keep their traced shapes,
    which may have unknown dimensions, and every other loop variable its own shape."""
    if not hook_spec:
        return None
    *others, _ = loop_vars
    invariants = tf.nest.map_structure(
        lambda v: v.shape if isinstance(v, tf.Tensor) else None, tuple(others))
    return invariants + (tf.nest.map_structure(lambda t: t.shape, hook_spec),)


def _tensor_arrays(spec, infer_shape=True, dtype=None):
    return tf.nest.map_structure(
        lambda t: tf.TensorArray(dtype or t.dtype, size=0, dynamic_size=True,
                                 infer_shape=infer_shape,
                                 element_shape=None if (dtype or not infer_shape) else t.shape),
        spec)
def _write(arrays, index, values):
    if values is None:
        return arrays
    return tf.nest.map_structure(lambda array, value: array.write(index, value), arrays, values)


def _stack(arrays):
    return tf.nest.map_structure(lambda array: array.stack(), arrays)
