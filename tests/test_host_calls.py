"""Tests for host_calls: TF1 metric_fn and host_call functions run on the host per step."""
import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import roc_auc_score

from tpu_estimator_compat.host import host_calls

REPLICAS = 8
PER_REPLICA = 4
STEPS = 3


def _steps(seed=0):
    """Per-step concatenated tensors, as the engine hands them over: [REPLICAS * PER_REPLICA]."""
    rng = np.random.RandomState(seed)
    n = REPLICAS * PER_REPLICA
    steps = []
    for _ in range(STEPS):
        labels = rng.randint(0, 2, n).astype(np.int64)
        probabilities = np.clip(rng.rand(n) * 0.6 + labels * 0.3, 0, 1).astype(np.float32)
        steps.append({
            "labels": labels,
            "predictions": (probabilities > 0.5).astype(np.int64),
            "probabilities": probabilities,
            "weights": rng.rand(n).astype(np.float32),
            "values": rng.randn(n).astype(np.float32),
        })
    return steps


def _concat(steps, key):
    return np.concatenate([step[key] for step in steps])


def _binary_metric_fn(labels, predictions, probabilities, weights, values):
    metrics = tf.compat.v1.metrics
    return {
        "accuracy": metrics.accuracy(labels, predictions, weights=weights),
        "mean": metrics.mean(values, weights=weights),
        "precision": metrics.precision(labels, predictions, weights=weights),
        "recall": metrics.recall(labels, predictions, weights=weights),
        "mse": metrics.mean_squared_error(tf.cast(labels, tf.float32), probabilities,
                                          weights=weights),
    }


def _expected_binary(steps):
    labels, predictions = _concat(steps, "labels"), _concat(steps, "predictions")
    probabilities, values = _concat(steps, "probabilities"), _concat(steps, "values")
    w = _concat(steps, "weights").astype(np.float64)
    return {
        "accuracy": np.sum(w * (labels == predictions)) / np.sum(w),
        "mean": np.sum(w * values) / np.sum(w),
        "precision": np.sum(w * labels * predictions) / np.sum(w * predictions),
        "recall": np.sum(w * labels * predictions) / np.sum(w * labels),
        "mse": np.sum(w * (labels - probabilities) ** 2) / np.sum(w),
    }


_ORDER = ("labels", "predictions", "probabilities", "weights", "values")


def _as_list(step):
    return [step[key] for key in _ORDER]


def test_list_form_metrics_match_numpy_after_every_step():
    steps = _steps()
    with host_calls.MetricFnRunner(_binary_metric_fn, _as_list(steps[0])) as runner:
        assert runner.names == ["accuracy", "mean", "mse", "precision", "recall"]
        for i, step in enumerate(steps):
            runner.update(_as_list(step))
            result = runner.result()
            expected = _expected_binary(steps[:i + 1])
            assert set(result) == set(expected)
            for name, value in expected.items():
                np.testing.assert_allclose(result[name], value, rtol=1e-5, err_msg=name)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_dict_form_passes_keyword_arguments():
    steps = _steps(seed=1)
    with host_calls.MetricFnRunner(_binary_metric_fn, steps[0]) as runner:
        for step in steps:
            runner.update(step)
        result = runner.result()
    for name, value in _expected_binary(steps).items():
        np.testing.assert_allclose(result[name], value, rtol=1e-5, err_msg=name)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_auc_matches_sklearn():
    """Riemann-sum AUC over 1000 thresholds is within 1e-3 (absolute) of the exact AUC."""
    steps = _steps(seed=2)

    def metric_fn(labels, probabilities, weights):
        return {
            "auc": tf.compat.v1.metrics.auc(labels, probabilities, num_thresholds=1000),
            "weighted_auc": tf.compat.v1.metrics.auc(labels, probabilities, weights=weights,
                                                     num_thresholds=1000),
        }

    keys = ("labels", "probabilities", "weights")
    with host_calls.MetricFnRunner(metric_fn, [steps[0][k] for k in keys]) as runner:
        for step in steps:
            runner.update([step[k] for k in keys])
        result = runner.result()
    labels, probabilities = _concat(steps, "labels"), _concat(steps, "probabilities")
    weights = _concat(steps, "weights")
    np.testing.assert_allclose(result["auc"], roc_auc_score(labels, probabilities), atol=1e-3)
    np.testing.assert_allclose(result["weighted_auc"],
                               roc_auc_score(labels, probabilities, sample_weight=weights),
                               atol=1e-3)


def test_mean_per_class_accuracy_and_varying_batch_size():
    rng = np.random.RandomState(3)
    steps = [{"labels": rng.randint(0, 3, n), "predictions": rng.randint(0, 3, n)}
             for n in (REPLICAS * 2, REPLICAS * 5)]

    def metric_fn(labels, predictions):
        return {"per_class": tf.compat.v1.metrics.mean_per_class_accuracy(
            labels, predictions, num_classes=3)}

    spec = {"labels": tf.TensorSpec([REPLICAS], tf.int64),
            "predictions": tf.TensorSpec([REPLICAS], tf.int64)}
    with host_calls.MetricFnRunner(metric_fn, spec) as runner:
        for step in steps:
            runner.update(step)
        result = runner.result()
    labels, predictions = _concat(steps, "labels"), _concat(steps, "predictions")
    per_class = [np.mean(predictions[labels == c] == c) for c in range(3)]
    np.testing.assert_allclose(result["per_class"], np.mean(per_class), rtol=1e-6)


def test_reset_starts_from_scratch_and_metric_fn_is_called_once():
    calls = []

    def metric_fn(values):
        calls.append(values)
        return {"mean": tf.compat.v1.metrics.mean(values)}

    with host_calls.MetricFnRunner(metric_fn, [np.zeros([REPLICAS], np.float32)]) as runner:
        runner.update([np.full([REPLICAS], 10.0)])
        runner.reset()
        runner.update([np.arange(REPLICAS, dtype=np.float32)])
        runner.update([np.arange(REPLICAS, dtype=np.float32) + 8])
        assert runner.result() == {"mean": pytest.approx(np.mean(np.arange(16)))}
    assert len(calls) == 1


@pytest.mark.parametrize("tensors, name", [
    ([np.zeros([REPLICAS]), np.float32(1.0)], "eval_metrics[1][1]"),
    ({"loss": tf.TensorSpec([], tf.float32)}, "eval_metrics[1]['loss']"),
])
def test_scalar_tensor_is_rejected_with_the_original_message(tensors, name):
    with pytest.raises(RuntimeError) as error:
        host_calls.MetricFnRunner(lambda *a, **k: {}, tensors)
    message = str(error.value)
    assert message.startswith("All tensors outfed from TPU should preserve batch size "
                              "dimension, but got scalar " + name)
    assert "tf.reshape(x, [1])" in message


def test_scalars_reach_metric_fn_as_scalars_when_allowed():
    ranks = []

    def metric_fn(loss, values):
        ranks.append((loss.shape.rank, values.shape.rank))
        return {"loss": tf.compat.v1.metrics.mean(loss),
                "values": tf.compat.v1.metrics.mean(values)}

    example = [np.float32(0.0), np.zeros([2], np.float32)]
    with host_calls.MetricFnRunner(metric_fn, example, scalars=True) as runner:
        runner.update([np.float32(1.0), np.array([1.0, 2.0], np.float32)])
        runner.update([np.float32(4.0), np.array([6.0], np.float32)])
        assert runner.result() == {"loss": 2.5, "values": 3.0}
    assert ranks == [(0, 1)]


@pytest.mark.parametrize("returned, fragment", [
    (lambda v: tf.compat.v1.metrics.mean(v), "must return a dict"),
    (lambda v: {"mean": tf.reduce_mean(v)}, "for metric 'mean'"),
])
def test_metric_fn_must_return_value_update_pairs(returned, fragment):
    with pytest.raises(TypeError, match=fragment):
        host_calls.MetricFnRunner(returned, [np.zeros([REPLICAS], np.float32)])


def test_step_structure_mismatch_and_closed_runner():
    runner = host_calls.MetricFnRunner(
        lambda values: {"mean": tf.compat.v1.metrics.mean(values)},
        {"values": np.zeros([REPLICAS], np.float32)})
    with pytest.raises(ValueError, match="do not match the structure"):
        runner.update({"other": np.zeros([REPLICAS], np.float32)})
    runner.close()
    with pytest.raises(RuntimeError):
        runner.update({"values": np.zeros([REPLICAS], np.float32)})


# ------------------------------------------------------------------------------------------
# HostCallRunner (summary writing is covered in test_summaries.py).

def test_host_call_ops_run_once_per_step_in_a_graph_built_once():
    calls = []

    def host_call_fn(x, scale):
        calls.append(1)
        counter = tf.compat.v1.get_variable("counter", [], tf.float32,
                                            initializer=tf.compat.v1.zeros_initializer())
        return [counter.assign_add(1.0), tf.reduce_sum(x) * scale[0]]

    example = [np.zeros([REPLICAS, 2], np.float32), np.zeros([REPLICAS], np.float32)]
    with host_calls.HostCallRunner(host_call_fn, example) as runner:
        outputs = [runner([np.full([REPLICAS, 2], s, np.float32), np.full([REPLICAS], 2.0)])
                   for s in range(4)]
    assert len(calls) == 1
    assert [o[0] for o in outputs] == [1.0, 2.0, 3.0, 4.0]
    assert [o[1] for o in outputs] == [0.0, 32.0, 64.0, 96.0]


def test_host_call_dict_form_and_none_return():
    seen = []

    def host_call_fn(loss, step):
        seen.append((loss.shape.as_list(), step.dtype))

    with host_calls.HostCallRunner(host_call_fn, {"loss": np.zeros([1], np.float32),
                                                  "step": np.zeros([1], np.int64)}) as runner:
        assert runner({"loss": np.ones([REPLICAS], np.float32),
                       "step": np.zeros([REPLICAS], np.int64)}) is None
    assert seen == [([None], tf.int64)]


def test_v1_summaries_in_host_call_are_rejected():
    def host_call_fn(loss):
        return tf.compat.v1.summary.scalar("loss", loss[0])

    with pytest.raises(ValueError) as error:
        host_calls.HostCallRunner(host_call_fn, [np.zeros([1], np.float32)])
    assert str(error.value) == ("Please use tf.contrib.summary instead of tf.summary inside of "
                                "host_calls.")


def test_host_call_global_step_is_fed_per_step():
    def host_call_fn(x):
        return tf.compat.v1.train.get_global_step() * 10 + tf.cast(x[0], tf.int64)

    with host_calls.HostCallRunner(host_call_fn, [np.zeros([1], np.int32)]) as runner:
        assert runner([np.array([3] * REPLICAS, np.int32)], global_step=7) == 73
        with pytest.raises(ValueError, match="pass `global_step=`"):
            runner([np.array([3] * REPLICAS, np.int32)])


def test_host_call_scalar_and_unrunnable_return_are_rejected():
    with pytest.raises(RuntimeError, match=r"but got scalar host_call\[1\]\['lr'\]"):
        host_calls.HostCallRunner(lambda lr: None, {"lr": np.float32(0.1)})
    with pytest.raises(TypeError, match="is not a tensor or an op"):
        host_calls.HostCallRunner(lambda x: object(), [np.zeros([1])])
