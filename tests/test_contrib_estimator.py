"""tf.contrib.estimator / tf.estimator.experimental: early stopping, add_metrics,
clip_gradients_by_norm, forward_features; expected numbers are TF 2.15 + estimator 2.15's
(`tf.compat.v1.estimator`, graph mode) on the same model and data."""
import numpy as np
import pytest

import tpu_estimator_compat.v1 as tf

X = np.linspace(-1, 1, 32).astype(np.float32).reshape(-1, 1)
Y = (2 * X + 1).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8)


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    loss = tf.losses.mean_squared_error(labels, pred) if labels is not None else None
    opt = tf.train.GradientDescentOptimizer(params.get("lr", 0.05))
    if params.get("clip"):
        opt = tf.contrib.estimator.clip_gradients_by_norm(opt, params["clip"])
    train_op = (opt.minimize(loss, global_step=tf.train.get_global_step())
                if mode == tf.estimator.ModeKeys.TRAIN else None)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, predictions={"y": pred},
        eval_metric_ops=({"mae": tf.metrics.mean_absolute_error(labels, pred)}
                         if labels is not None else None))


def _train_and_evaluate(model_dir, make_hook):
    est = tf.estimator.Estimator(model_fn, str(model_dir),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=5))
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(input_fn, max_steps=200, hooks=[make_hook(est)]),
        tf.estimator.EvalSpec(input_fn, steps=2, throttle_secs=0, start_delay_secs=0))
    return est


def test_stop_if_lower_hook_stops_where_the_original_does(tmp_path):
    est = _train_and_evaluate(tmp_path, lambda est: tf.estimator.experimental.stop_if_lower_hook(
        est, "loss", 0.05, run_every_secs=None, run_every_steps=1))
    assert est.get_variable_value("global_step") == 45  # the original's step
    evals = tf.contrib.estimator.read_eval_metrics(est.eval_dir())
    assert list(evals) == [5, 10, 15, 20, 25, 30, 35, 40, 45]
    np.testing.assert_allclose(  # the original's eval losses
        [evals[step]["loss"] for step in evals],
        [0.27911, 0.27158, 0.2811, 0.27386, 0.15442, 0.11437, 0.09622, 0.08182, 0.04214],
        atol=1e-5)


def test_stop_if_no_decrease_hook_stops_where_the_original_does(tmp_path):
    est = _train_and_evaluate(tmp_path, lambda est: tf.contrib.estimator.stop_if_no_decrease_hook(
        est, "mae", 0, min_steps=12, run_every_secs=None, run_every_steps=3))
    assert est.get_variable_value("global_step") == 16  # the original's step


def test_early_stopping_validates_as_the_original():
    est = tf.estimator.Estimator(model_fn)
    with pytest.raises(ValueError, match="Only one of `run_every_secs` and `run_every_steps`"):
        tf.estimator.experimental.stop_if_higher_hook(est, "auc", 0.9, run_every_steps=10)
    with pytest.raises(TypeError, match="`estimator` must have type `tf.estimator.Estimator`"):
        tf.estimator.experimental.make_early_stopping_hook(object(), lambda: True)
    with pytest.raises(TypeError, match="`should_stop_fn` must be callable."):
        tf.estimator.experimental.make_early_stopping_hook(est, True)
    assert tf.contrib.estimator.read_eval_metrics("/nonexistent/eval") == {}


def test_add_metrics_gives_the_originals_numbers(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1})
    est.train(input_fn, max_steps=10)

    def metric_fn(labels, predictions, features):
        del labels
        return {"mean_pred": tf.metrics.mean(predictions["y"]),
                "mae": tf.metrics.mean(features["x"])}  # overrides the model_fn's

    results = tf.contrib.estimator.add_metrics(est, metric_fn).evaluate(eval_input_fn)
    assert sorted(results) == ["global_step", "loss", "mae", "mean_pred"]
    np.testing.assert_allclose([results["loss"], results["mae"], results["mean_pred"]],
                               [0.369928, 0.0, 0.803531], atol=1e-6)
    assert tf.estimator.add_metrics is tf.contrib.estimator.add_metrics
    with pytest.raises(ValueError, match=r"has following not expected args: \['params'\]"):
        tf.contrib.estimator.add_metrics(est, lambda labels, params: {})


def test_clip_gradients_by_norm_gives_the_originals_weights(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1, "clip": 0.5})
    est.train(input_fn, max_steps=5)
    # The original: compute_gradients -> tf.clip_by_global_norm(grads, 0.5) -> apply.
    np.testing.assert_allclose(est.get_variable_value("w").ravel(), [0.10085391], rtol=1e-6)
    np.testing.assert_allclose(est.get_variable_value("b").ravel(), [0.06028957], rtol=1e-6)


def test_forward_features_adds_the_features_to_the_predictions(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1})
    est.train(input_fn, max_steps=3)
    ids = np.arange(4, dtype=np.int64)

    def predict_input_fn():
        return tf.data.Dataset.from_tensor_slices({"x": X[:4], "id": ids}).batch(2)

    plain = list(est.predict(predict_input_fn))
    forwarded = list(tf.contrib.estimator.forward_features(est, "id").predict(predict_input_fn))
    assert [sorted(row) for row in forwarded] == [["id", "y"]] * 4
    assert [row["id"] for row in forwarded] == [0, 1, 2, 3]
    np.testing.assert_array_equal([row["y"] for row in forwarded], [row["y"] for row in plain])
    everything = list(tf.contrib.estimator.forward_features(est).predict(predict_input_fn))
    np.testing.assert_array_equal([row["x"] for row in everything], X[:4])
    with pytest.raises(TypeError, match="keys should be either a string or a list of strings"):
        tf.contrib.estimator.forward_features(est, 3)
    with pytest.raises(ValueError, match=r"Cannot forward feature key \(y\)"):
        list(tf.contrib.estimator.forward_features(est, "y").predict(
            lambda: tf.data.Dataset.from_tensor_slices({"x": X[:2], "y": X[:2]}).batch(2)))


@pytest.mark.parametrize("name, replacement", [
    ("replicate_model_fn", "RunConfig(train_distribute=tf.distribute.MirroredStrategy())"),
    ("TowerOptimizer", "RunConfig(train_distribute=tf.distribute.MirroredStrategy())"),
    ("multi_class_head", "no heads or canned estimators"),
])
def test_unserved_names_name_the_replacement(name, replacement):
    with pytest.raises(AttributeError) as error:
        getattr(tf.contrib.estimator, name)
    assert f"Instead of {name}, use" in str(error.value)
    assert replacement in str(error.value)
