"""engine/loops.py: the device loops (steps run, early stop at the end of input, values
returned per step) and the host's view of one step on 8 replicas, with fake step and
replica functions (no model_fn, no estimator).

Step outputs are `engine.step_outputs` types: `StepOutputs` from the fake steps,
`ReplicaOutputs` from the fake replica functions; loop results are read by `_train_result`
and `_inference_result` only.
"""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat.api.spec import ModeKeys
from tpu_estimator_compat.config.run_config import RunConfig
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.engine import batching
from tpu_estimator_compat.engine import inputs
from tpu_estimator_compat.engine import loops
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.engine import runtime as runtime_lib
from tpu_estimator_compat.engine import step_graph
from tpu_estimator_compat.engine.step_outputs import ReplicaOutputs
from tpu_estimator_compat.engine.step_outputs import StepOutputs
from tpu_estimator_compat.engine.variable_store import VariableStore

REPLICAS = 8


def _train_result(result):
    """A `TrainLoopResult` as {'loss', 'host_call', 'hook_fetches', 'finite'} of numpy."""
    return {"loss": result.loss.numpy(),
            "host_call": tf.nest.map_structure(np.asarray, result.host_call),
            "hook_fetches": tf.nest.map_structure(np.asarray, result.hook_fetches),
            "finite": bool(result.loss_finite)}


def _present(outputs):
    return {name: value for name, value in outputs._asdict().items() if value is not None}


def _inference_result(result):
    """An `InferenceLoopResult` as {'steps': steps run, field: per-step scalars or
    concatenated batch values, 'rows': rows per step of each batch output, 'hook_fetches':
    ...} of numpy."""
    result = result.numpy()
    return {**_present(result._replace(batches=None, rows=None)), **_present(result.batches),
            "rows": _present(result.rows), "steps": len(result.stop)}


# The loops alone: a plain step function on a plain iterator, one device. -----------------

def test_train_loop_runs_n_steps_and_returns_the_last_and_per_step_values():
    ran = tf.Variable(0)

    def step(x):
        with tf.control_dependencies([ran.assign_add(1)]):
            return StepOutputs(loss=tf.identity(x), loss_finite=tf.math.is_finite(x),
                               host_call={"x": tf.reshape(x, [1])},
                               hook_fetches={"double": 2 * x,
                                             "ramp": tf.range(tf.cast(x, tf.int32))})

    loop = loops.make_train_loop(step, StepOutputs(
        loss=tf.TensorSpec([], tf.float32), loss_finite=tf.TensorSpec([], tf.bool),
        host_call={"x": tf.TensorSpec([1], tf.float32)},
        hook_fetches={"double": tf.TensorSpec([], tf.float32),
                      "ramp": tf.TensorSpec([None], tf.int32)}))
    iterator = iter(tf.data.Dataset.range(1, 100).map(lambda i: tf.cast(i, tf.float32)))

    first = _train_result(loop(iterator, tf.constant(5)))
    assert int(ran.numpy()) == 5
    assert first["loss"] == 5.0 and first["finite"]
    assert first["host_call"]["x"].tolist() == [[1.0], [2.0], [3.0], [4.0], [5.0]]
    assert first["hook_fetches"]["double"] == 10.0
    assert first["hook_fetches"]["ramp"].tolist() == [0, 1, 2, 3, 4]  # a shape per step
    second = _train_result(loop(iterator, tf.constant(2)))  # the iterator goes on
    assert int(ran.numpy()) == 7
    assert second["loss"] == 7.0 and second["host_call"]["x"].tolist() == [[6.0], [7.0]]


def test_a_one_step_train_loop_returns_what_a_loop_of_one_step_returns():
    """Estimator's loops (one step per Session.run) are the step alone, without the while
    loop whose frame every variable enters: the same results, call after call."""
    def make(one_step):
        ran = tf.Variable(0.0)

        def step(x):
            with tf.control_dependencies([ran.assign_add(x)]):
                return StepOutputs(loss=ran.read_value(), loss_finite=tf.math.is_finite(x),
                                   host_call={"x": tf.reshape(x, [1])},
                                   hook_fetches={"ramp": tf.range(tf.cast(tf.minimum(x, 5.0),
                                                                          tf.int32))})

        loop = loops.make_train_loop(step, StepOutputs(
            loss=tf.TensorSpec([], tf.float32), loss_finite=tf.TensorSpec([], tf.bool),
            host_call={"x": tf.TensorSpec([1], tf.float32)},
            hook_fetches={"ramp": tf.TensorSpec([None], tf.int32)}), one_step=one_step)
        values = [1.0, 2.0, float("inf"), 3.0]
        iterator = iter(tf.data.Dataset.from_tensor_slices(values))
        results = [_train_result(loop(iterator, tf.constant(1))) for _ in values]
        graph = loop.get_concrete_function(iterator, tf.constant(1)).graph
        return results, {op.type for op in graph.get_operations()}

    one_step, one_step_ops = make(one_step=True)
    looped, looped_ops = make(one_step=False)
    assert "While" in looped_ops and "While" not in one_step_ops
    for got, expected in zip(one_step, looped):
        np.testing.assert_equal(got, expected)
    assert [r["loss"] for r in one_step] == [1.0, 3.0, float("inf"), float("inf")]
    assert [r["finite"] for r in one_step] == [True, True, False, True]
    assert one_step[1]["host_call"]["x"].tolist() == [[2.0]]
    assert one_step[1]["hook_fetches"]["ramp"].tolist() == [0, 1]


def test_train_loop_reports_a_non_finite_loss_at_any_step():
    loop = loops.make_train_loop(
        lambda x: StepOutputs(loss=x, loss_finite=tf.math.is_finite(x)),
        StepOutputs(loss=tf.TensorSpec([], tf.float32), loss_finite=tf.TensorSpec([], tf.bool)))
    iterator = iter(tf.data.Dataset.from_tensor_slices([1.0, np.nan, 3.0, 4.0, 5.0]))
    result = _train_result(loop(iterator, tf.constant(3)))
    assert result["loss"] == 3.0 and not result["finite"]
    assert _train_result(loop(iterator, tf.constant(2)))["finite"]


def _inference_step(element):
    """Rows of value `i`, a stop flag; the hooks fetch the rows' sum."""
    x, stop = element["x"], element["stop"]
    return StepOutputs(loss=tf.reduce_sum(x), loss_has_real_rows=tf.logical_not(stop),
                       metric_updates={"mean": tf.reduce_mean(x)}, predictions={"p": 2 * x},
                       mask=tf.cast(tf.fill(tf.shape(x), tf.logical_not(stop)), tf.int32),
                       stop=stop, hook_fetches={"sum": tf.reduce_sum(x)})


def _inference_input():
    """Batches of 2, 2 and 1 rows (values 1, 2, 3), then endless 2-row stop batches."""
    def batch(i):
        rows = tf.where(tf.equal(i, 3), 1, 2)
        return {"x": tf.fill([rows], tf.cast(i, tf.float32)), "stop": i > 3}
    return iter(tf.data.Dataset.range(1, 1000).map(batch))


def _inference_loop():
    scalar, rows = tf.TensorSpec([], tf.float32), tf.TensorSpec([None], tf.float32)
    return loops.make_inference_loop(_inference_step, StepOutputs(
        loss=scalar, loss_has_real_rows=tf.TensorSpec([], tf.bool),
        metric_updates={"mean": scalar}, predictions={"p": rows},
        mask=tf.TensorSpec([None], tf.int32), stop=tf.TensorSpec([], tf.bool),
        hook_fetches={"sum": scalar}))


def test_inference_loop_stops_at_the_first_stop_step_and_splits_batches_by_rows():
    result = _inference_result(_inference_loop()(_inference_input(), tf.constant(10)))

    assert result["steps"] == 4  # 3 batches, then the stop batch that ended the loop
    assert result["stop"].tolist() == [False, False, False, True]
    assert result["loss"].tolist() == [2.0, 4.0, 3.0, 8.0]
    assert result["loss_has_real_rows"].tolist() == [True, True, True, False]
    assert result["metric_updates"]["mean"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert result["rows"]["predictions"]["p"].tolist() == [2, 2, 1, 2]
    assert result["predictions"]["p"].tolist() == [2, 2, 4, 4, 6, 8, 8]
    assert result["mask"].tolist() == [1, 1, 1, 1, 1, 0, 0]
    # The hooks see the last step where replica 0 had real rows, not the stop batch.
    assert result["hook_fetches"]["sum"] == 3.0


def test_inference_loop_runs_at_most_max_steps_and_the_next_loop_goes_on():
    loop, iterator = _inference_loop(), _inference_input()
    first = _inference_result(loop(iterator, tf.constant(2)))
    assert first["steps"] == 2 and first["loss"].tolist() == [2.0, 4.0]
    assert first["stop"].tolist() == [False, False]
    second = _inference_result(loop(iterator, tf.constant(2)))
    assert second["loss"].tolist() == [3.0, 8.0] and second["stop"].tolist() == [False, True]


# One step on 8 replicas as the host sees it: make_step_body, traced as the engine does. --

def _iterator(strategy, mode, count):
    """8 replicas x 2 rows per step of examples 0, 1, ... (`inputs`, PER_HOST_V2)."""
    runtime = runtime_lib.runtime_for_strategy(strategy, tpu_semantics=True)
    plan = batching.plan_batches(16, mode, runtime, TPUConfig())
    program = model_bridge.UserProgram(None, {}, RunConfig())

    def input_fn(params):
        x = tf.range(count, dtype=tf.float32)
        # step 2, replica 2 (tf.equal: input_fn is TF1 code, where `==` is identity)
        x = tf.where(tf.equal(x, 21.0), np.nan, x)
        return tf.data.Dataset.from_tensor_slices(x).batch(params["batch_size"],
                                                           drop_remainder=mode == ModeKeys.TRAIN)
    return inputs.distributed_iterator(input_fn, mode, runtime, plan, program)


def _device_loop(strategy, replica_fn, iterator, make_loop):
    store = VariableStore(strategy)
    body = loops.make_step_body(strategy, store, replica_fn, [], [],
                                after_replicas=lambda: None)
    with strategy.scope(), store.creating_variables():
        step = step_graph.StepGraph.trace(body, inputs.step_element_spec(strategy, iterator))
    return make_loop(step.instantiate, step.outputs,
                     inputs.step_element_reader(strategy, iterator))


def test_train_step_gives_replica_0s_loss_and_batch_outputs_of_all_replicas(eight_devices):
    iterator = _iterator(eight_devices, ModeKeys.TRAIN, 16 * 6)
    loop = _device_loop(
        eight_devices, lambda x: ReplicaOutputs(loss=tf.reduce_sum(x), host_call={"rows": x}),
        iterator, loops.make_train_loop)

    first = _train_result(loop(iterator, tf.constant(1)))
    assert first["loss"] == 0.0 + 1.0 and first["finite"]  # replica 0's rows 0 and 1
    assert first["host_call"]["rows"].tolist() == [list(range(16))]  # replicas in order
    second = _train_result(loop(iterator, tf.constant(2)))
    assert second["loss"] == 32.0 + 33.0  # the last step's
    assert second["host_call"]["rows"].shape == (2, 16)
    assert not second["finite"]  # replica 2's loss at step 2 was NaN; replica 0's never
    third = _train_result(loop(iterator, tf.constant(3)))
    assert third["finite"] and third["host_call"]["rows"][:, 0].tolist() == [48, 64, 80]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_inference_step_stops_when_every_replica_has_reached_the_end(eight_devices):
    iterator = _iterator(eight_devices, ModeKeys.EVAL, 21)  # 10 full replica batches + 1 row

    def replica_fn(element):
        x, signals = element
        stop = tf.cast(tf.reshape(tf.reduce_all(signals["stop"]), [1]), tf.int32)
        return ReplicaOutputs(loss=tf.reduce_sum(x), predictions={"x": x},
                              mask=tf.cast(signals["mask"], tf.int32), stop=stop)

    result = _inference_result(
        _device_loop(eight_devices, replica_fn, iterator, loops.make_inference_loop)(
            iterator, tf.constant(10)))
    # Step 1: every replica has data; step 2: replicas 0-2 (replica 2 one row); then all stop.
    assert result["steps"] == 3
    assert result["stop"].tolist() == [False, False, True]
    assert result["loss"].tolist() == [1.0, 16.0 + 17.0, 0.0]  # replica 0's
    assert result["loss_has_real_rows"].tolist() == [True, True, False]
    assert result["rows"]["mask"].tolist() == [16, 16, 16]
    real = result["predictions"]["x"][result["mask"].astype(bool)]
    assert real.tolist() == list(range(21))  # each example once, in order


def test_a_scalar_batch_output_is_an_error_naming_the_fix(eight_devices):
    iterator = _iterator(eight_devices, ModeKeys.TRAIN, 32)
    def replica_fn(x):
        return ReplicaOutputs(loss=tf.reduce_sum(x), host_call={"sum": tf.reduce_sum(x)})

    with pytest.raises(RuntimeError, match=r"All tensors outfed from TPU should preserve batch "
                                           r"size dimension.*\(in host_call\).*"
                                           r"tf.reshape\(x, \[1\]\)"):
        _device_loop(eight_devices, replica_fn, iterator, loops.make_train_loop)
