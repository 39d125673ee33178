"""The engine's output types: what crosses strategy.run and tf.function, and how the host
splits an inference loop's concatenated batches back into steps."""
import numpy as np
import tensorflow as tf

from tpu_estimator_compat.engine.step_outputs import BatchOutputs
from tpu_estimator_compat.engine.step_outputs import InferenceLoopResult
from tpu_estimator_compat.engine.step_outputs import ReplicaOutputs
from tpu_estimator_compat.engine.step_outputs import TrainLoopResult


def _loop(examples, score_rows, scores, hook_step, stop):
    """A numpy inference result: per step, `examples[i]` mask rows and `score_rows[i]` rows
    of the metric tensor `scores` (all steps concatenated)."""
    mask = np.concatenate([np.ones(n, np.int32) for n in examples])
    return InferenceLoopResult(
        stop=np.array(stop), loss_has_real_rows=np.ones(len(stop), bool),
        batches=BatchOutputs(metrics={"score": np.asarray(scores, np.float32)}, mask=mask),
        rows=BatchOutputs(metrics={"score": np.array(score_rows, np.int32)},
                          mask=np.array(examples, np.int32)),
        hook_fetches={"fetch_0": np.int64(hook_step)}, loss=np.arange(len(stop), dtype=np.float32))


def test_replica_outputs_cross_strategy_run_with_absent_fields_none(one_device):
    per_replica = one_device.run(
        lambda: ReplicaOutputs(loss=tf.constant(2.0), hook_fetches={"fetch_0": tf.constant(3)}))
    assert isinstance(per_replica, ReplicaOutputs)
    assert float(one_device.experimental_local_results(per_replica.loss)[0]) == 2.0
    assert per_replica.predictions is None and per_replica.mask is None


def test_loop_results_come_out_of_tf_function_typed():
    @tf.function(autograph=False)
    def loop():
        return TrainLoopResult(loss=tf.constant(0.5), loss_finite=tf.constant(True),
                               host_call=None, hook_fetches={})

    result = loop()
    assert isinstance(result, TrainLoopResult)
    assert (float(result.loss), bool(result.loss_finite), result.host_call) == (0.5, True, None)


def test_batches_per_step_splits_by_each_outputs_own_row_counts():
    # Two steps of 2 and 1 examples; the metric tensor has 2 rows per example.
    result = _loop([2, 1], [4, 2], [10, 11, 12, 13, 20, 21], hook_step=7, stop=[False, True])
    steps = list(result.batches_per_step())
    assert [step.mask.tolist() for step in steps] == [[1, 1], [1]]
    assert [step.metrics["score"].tolist() for step in steps] == [[10, 11, 12, 13], [20, 21]]
    assert steps[0].predictions is None and steps[0].host_call is None


def test_concatenate_appends_steps_and_keeps_the_last_loops_hook_values():
    first = _loop([2], [2], [1, 2], hook_step=1, stop=[False])
    second = _loop([1, 1], [1, 1], [3, 4], hook_step=2, stop=[False, True])
    both = first.concatenate(second)
    assert both.stop.tolist() == [False, False, True]
    assert both.loss.tolist() == [0.0, 0.0, 1.0]
    assert both.metric_updates is None
    assert [s.metrics["score"].tolist() for s in both.batches_per_step()] == [[1, 2], [3], [4]]
    assert both.hook_fetches == {"fetch_0": 2}


def test_numpy_converts_tensors_and_leaves_absent_fields_none():
    result = InferenceLoopResult(
        stop=tf.constant([True]), loss_has_real_rows=tf.constant([False]),
        batches=BatchOutputs(predictions=tf.constant([[1.0]]), mask=tf.constant([0])),
        rows=BatchOutputs(predictions=tf.constant([1]), mask=tf.constant([1])),
        hook_fetches={}).numpy()
    assert isinstance(result.batches.predictions, np.ndarray)
    assert result.batches.metrics is None and result.loss is None
