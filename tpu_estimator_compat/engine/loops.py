"""The device loops: `tf.function`s that run many steps per host round trip.

`make_step_body` runs one `strategy.run` of the replica function and returns the host's
view of its `ReplicaOutputs` (a `StepOutputs`: replica 0's loss, batch tensors concatenated
across replicas). The engine traces it once, TF1-style (`step_graph.StepGraph`), which
creates the model's variables and tells the structure of the outputs; the loops then copy
the pruned step into the body of a `tf.while_loop` (`step(element)` below is
`StepGraph.instantiate`):

    train_loop(iterator, n):      n x step(next(iterator))                 -> TrainLoopResult
                                  (the step alone, no while loop, when every loop of the
                                  call is one step: Estimator, hooks seeing every step)
    inference_loop(iterator, n):  step(next(iterator)) until n or all stop -> InferenceLoopResult

Both also return the hooks' fetches (`hook_fetches`, see `hook_placement.py`): replica 0's
values from the last step (inference: the last step where replica 0 had real examples).
"""
import contextlib
import functools

import tensorflow as tf

from tpu_estimator_compat.tf1_behaviour import patches as legacy_patches
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine.step_outputs import BatchOutputs
from tpu_estimator_compat.engine.step_outputs import InferenceLoopResult
from tpu_estimator_compat.engine.step_outputs import StepOutputs
from tpu_estimator_compat.engine.step_outputs import TrainLoopResult
from tpu_estimator_compat.engine.step_outputs import map_present

# StepOutputs stacked per step by the inference loop (`stop` too: with max_steps=1 a loop
# that ran its one step may have stopped).
_SCALAR_OUTPUTS = ("loss", "loss_has_real_rows", "metric_updates", "stop")


def make_step_body(strategy, store, replica_fn, init_from_checkpoint_calls, kept_alive,
                   after_replicas, tpu_semantics=True, before_replicas=None, replay=None):
    """The Python function of one step on every replica; see the module docstring.

    `before_replicas(element)` (if given) is called before the replicas' calls and
    `after_replicas()` after them, in cross-replica context;
    `init_from_checkpoint_calls` and `kept_alive` are `legacy_patches.patched_rebuilt_apis`'s.
    Without `tpu_semantics`, a scalar `eval_metrics` tensor of a single replica reaches the
    host as one row (TF1's CPU path called metric_fn on it directly). With `replay` (a
    `replica_replay.ReplicaReplay`) only replica 0 calls `replica_fn`; the others copy it.
    """
    def replica_step(element):
        with step_graph.building_replica(), store.creating_variables_in_replica():
            store.prepare_graph()  # each replica has its own collections
            if replay is None:
                return replica_fn(element)
            return replay.run(step_graph.current_replica(), replica_fn, element)

    def step(element):
        store.prepare_graph()
        with legacy_patches.patched_rebuilt_apis(
                init_from_checkpoint_calls, kept_alive, per_replica_updates=tpu_semantics,
                merge_call=replay and replay.merge_call), \
                (replay.active() if replay else contextlib.nullcontext()):
            if before_replicas is not None:
                before_replicas(element)
            per_replica = strategy.run(replica_step, args=(element,))
            after_replicas()
        return _host_view(strategy, per_replica, tpu_semantics)
    return step


def _host_view(strategy, per_replica, tpu_semantics):
    """The `StepOutputs` of the replicas' `ReplicaOutputs` (a PerReplica nest)."""
    # Evaluation on several workers: every worker gets global replica 0's scalars (so all
    # return the same results); elsewhere replica 0 is local. Training broadcasts its loss
    # once per loop instead (training.py), not once per step.
    inference = per_replica.mask is not None
    first = (_global_first_replica if inference and runtime_lib.is_between_graph(strategy)
             else _local_first_replica)
    # Replica 0's scalars, fetched only once every replica computed its own (the loss waits
    # for the replica's train op, a metric value for its update), as TF1 ran all replicas.
    scalars = [per_replica.loss, per_replica.metric_updates]
    replicas_done = tf.group([strategy.experimental_local_results(v)
                              for v in tf.nest.flatten(scalars) if v is not None])

    def replica_0(value):
        with tf.control_dependencies([replicas_done]):
            return map_present(lambda v: tf.identity(first(strategy, v)), value)

    def gathered(name):
        scalar_rows = name == "metrics" and not tpu_semantics
        return map_present(lambda v: _gather(strategy, v, name, scalar_rows),
                           getattr(per_replica, name))

    view = StepOutputs(
        loss=replica_0(per_replica.loss),
        host_call=gathered("host_call"),
        metrics=gathered("metrics"),
        metric_updates=replica_0(per_replica.metric_updates),
        predictions=gathered("predictions"),
        mask=gathered("mask"),
        # this worker's first replica: hooks run on every worker
        hook_fetches=map_present(lambda v: _local_first_replica(strategy, v),
                                 per_replica.hook_fetches))
    if not inference:  # no collective: this worker's replicas, AND-ed over the loop
        return view._replace(loss_finite=_all_local_finite(strategy, per_replica.loss))
    if first is _local_first_replica:  # whether replica 0 had data
        has_real_rows = tf.reduce_any(_local_first_replica(strategy, per_replica.mask) > 0)
    else:
        has_rows = strategy.run(  # int32: the cross-replica gather has no bool kernel
            lambda mask: tf.cast(tf.reduce_any(mask > 0), tf.int32), args=(per_replica.mask,))
        has_real_rows = first(strategy, has_rows) > 0
    return view._replace(loss_has_real_rows=has_real_rows,
                         stop=tf.reduce_all(gathered("stop") > 0))


def _local_first_replica(strategy, value):
    return strategy.experimental_local_results(value)[0]


def _all_local_finite(strategy, value):
    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(v))
                                   for v in strategy.experimental_local_results(value)]))


def _global_first_replica(strategy, value):
    """Replica 0's value on every worker (one all-gather): replica 0 is on the chief."""
    rows = strategy.run(lambda v: tf.expand_dims(v, 0), args=(value,))
    return strategy.gather(rows, axis=0)[0]


def _gather(strategy, value, key, scalar_rows=False):
    """`value` concatenated across replicas on axis 0; with `scalar_rows`, a single
    replica's scalar as one row."""
    first = strategy.experimental_local_results(value)[0]
    if first.shape.rank == 0 and scalar_rows:
        if strategy.num_replicas_in_sync > 1:
            raise RuntimeError(
                f"eval_metrics passes a scalar ({first}) to metric_fn while evaluating on "
                f"{strategy.num_replicas_in_sync} replicas (RunConfig's eval_distribute): "
                "a scalar is supported with use_tpu=False on one replica only. Reshape it "
                "to [1] (tf.reshape(x, [1])) to receive one row per replica, or evaluate "
                "without eval_distribute.")
        return tf.reshape(first, [1])
    if first.shape.rank == 0:
        raise RuntimeError(
            "All tensors outfed from TPU should preserve batch size dimension, but got "
            f"scalar {first} (in {key}). Reshape it to [1] (tf.reshape(x, [1])); the host "
            "receives it concatenated across replicas.")
    if not runtime_lib.is_between_graph(strategy):
        # This process holds every replica: concatenate here. Batches of different sizes
        # (CPU/GPU semantics: an input's last batches are not padded) cannot go through a
        # collective all-gather, which needs one shape on every replica.
        return tf.concat(strategy.experimental_local_results(value), axis=0)
    return strategy.gather(value, axis=0)


def make_train_loop(step_fn, step_outputs, read_element=next, one_step=False):
    """`train_loop(iterator, num_steps) -> TrainLoopResult`; `step_outputs` is the traced
    step's `StepOutputs` (for shapes and dtypes); `read_element(iterator)` gives a step's
    input. `one_step`: every call runs one step (`num_steps` is 1), with no while loop: a
    loop's frame costs the first run its graph optimisation over every variable entering
    it (about a fifth more nodes on a 24-layer encoder)."""
    host_call_spec = step_outputs.host_call
    hook_spec = _hook_fetches(step_outputs)
    if one_step:
        return tf.function(functools.partial(_one_step_loop, step_fn, read_element,
                                             host_call_spec), autograph=False)

    @tf.function(autograph=False)
    def train_loop(iterator, num_steps):
        arrays = _tensor_arrays({} if host_call_spec is None else host_call_spec)

        def body(i, loss, finite, arrays, hook_values):
            outputs = step_fn(read_element(iterator))
            arrays = _write(arrays, i, outputs.host_call)
            finite = tf.logical_and(finite, outputs.loss_finite)
            return i + 1, outputs.loss, finite, arrays, _hook_fetches(outputs)

        loop_vars = (tf.constant(0), tf.zeros([], step_outputs.loss.dtype), tf.constant(True),
                     arrays, _initial_values(hook_spec))
        _, loss, finite, arrays, hook_values = tf.while_loop(
            lambda i, *_: i < num_steps, body, loop_vars,
            shape_invariants=_shape_invariants(loop_vars, hook_spec))
        return TrainLoopResult(loss=loss, loss_finite=finite,
                               host_call=None if host_call_spec is None else _stack(arrays),
                               hook_fetches=hook_values)

    return train_loop


def _one_step_loop(step_fn, read_element, host_call_spec, iterator, num_steps):  # pylint: disable=unused-argument
    outputs = step_fn(read_element(iterator))
    arrays = _tensor_arrays({} if host_call_spec is None else host_call_spec)
    arrays = _write(arrays, 0, outputs.host_call)
    return TrainLoopResult(loss=outputs.loss, loss_finite=outputs.loss_finite,
                           host_call=None if host_call_spec is None else _stack(arrays),
                           hook_fetches=_hook_fetches(outputs))


def make_inference_loop(step_fn, step_outputs, read_element=next):
    """`loop(iterator, max_steps) -> InferenceLoopResult`; `step_outputs` and
    `read_element` as for training.

    Stops after `max_steps` or at the first step where every replica got a stop batch.
    Batch outputs may change size from step to step (the final partial batch on CPU/GPU), so
    they are concatenated, with each step's row count to split them again on the host.
    """
    # The loop variables hold only the outputs the step has, by field name.
    scalar_spec = _present(step_outputs, _SCALAR_OUTPUTS)
    batch_spec = _present(step_outputs, BatchOutputs._fields)
    hook_spec = _hook_fetches(step_outputs)

    @tf.function(autograph=False)
    def inference_loop(iterator, max_steps):
        scalars = _tensor_arrays(scalar_spec)
        batches = _tensor_arrays(batch_spec, infer_shape=False)
        rows = _tensor_arrays(batch_spec, dtype=tf.int32)

        def body(i, stopped, scalars, batches, rows, hook_values):
            outputs = step_fn(read_element(iterator))
            scalars = _write(scalars, i, _present(outputs, scalar_spec))
            step_batches = _present(outputs, batch_spec)
            batches = _write(batches, i, step_batches)
            rows = _write(rows, i, tf.nest.map_structure(lambda t: tf.shape(t)[0], step_batches))
            if hook_spec:  # keep the values of the last step where replica 0 had examples
                new_values = outputs.hook_fetches
                hook_values = tf.cond(outputs.loss_has_real_rows, lambda: new_values,
                                      lambda: hook_values)
            return i + 1, outputs.stop, scalars, batches, rows, hook_values

        loop_vars = (tf.constant(0), tf.constant(False), scalars, batches, rows,
                     _initial_values(hook_spec))
        _, _, scalars, batches, rows, hook_values = tf.while_loop(
            lambda i, stopped, *_: tf.logical_and(i < max_steps, tf.logical_not(stopped)),
            body, loop_vars, shape_invariants=_shape_invariants(loop_vars, hook_spec))
        return InferenceLoopResult(
            batches=BatchOutputs(**tf.nest.map_structure(lambda a: a.concat(), batches)),
            rows=BatchOutputs(**_stack(rows)), hook_fetches=hook_values, **_stack(scalars))

    return inference_loop


def _hook_fetches(outputs):
    """The hooks' fetches of a step: `{}` when it has none."""
    return {} if outputs.hook_fetches is None else outputs.hook_fetches


def _present(outputs, names):
    """`{name: outputs.<name>}` for the `names` whose output is not None."""
    return {name: getattr(outputs, name) for name in names
            if getattr(outputs, name) is not None}


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
