"""Estimator: EstimatorSpec model_fns with Estimator's rules, on CPU, beside TPUEstimator."""
import argparse

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from helpers import checkpoint_steps
from tpu_estimator_compat.export import receivers

v1 = tf.compat.v1
_rng = np.random.RandomState(5)
FEATURES = _rng.randn(40, 3).astype(np.float32)
TARGETS = (FEATURES @ np.array([[1.0], [-2.0], [0.5]]) + 0.5).astype(np.float32)


class Model:
    """An EstimatorSpec model_fn that records the params model_fn and input_fn receive."""

    def __init__(self):
        self.model_fn_params, self.input_fn_params = [], []
        self.step_hook = StepCountingHook()

    def model_fn(self, features, labels, mode, params):
        self.model_fn_params.append(params)
        weights = v1.get_variable("w", [3, 1], initializer=v1.zeros_initializer())
        bias = v1.get_variable("b", [], initializer=v1.zeros_initializer())
        predictions = tf.matmul(features["x"], weights) + bias
        if mode == tec.ModeKeys.PREDICT:
            return tec.EstimatorSpec(mode, predictions={"y": predictions[:, 0],
                                                        "x0": features["x"][:, 0]})
        loss = v1.losses.mean_squared_error(labels, predictions)
        if mode == tec.ModeKeys.EVAL:
            return tec.EstimatorSpec(mode, loss=loss, eval_metric_ops={
                "mae": v1.metrics.mean_absolute_error(labels, predictions)})
        optimizer = v1.train.GradientDescentOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                 training_hooks=[self.step_hook])

    def input_fn(self, params):
        self.input_fn_params.append(params)
        return finite_input_fn()


class StepCountingHook(v1.train.SessionRunHook):
    def __init__(self):
        self.after_run_steps = []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(v1.train.get_global_step())

    def after_run(self, run_context, run_values):
        self.after_run_steps.append(int(run_values.results))


def finite_input_fn():  # Estimator does not require a params argument
    return tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, TARGETS)).batch(10)


def repeated_input_fn():
    return finite_input_fn().repeat()


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": FEATURES}).batch(7)


def numpy_predictions(estimator):
    weights, bias = estimator.get_variable_value("w"), estimator.get_variable_value("b")
    return FEATURES @ weights + bias


def test_params_as_given_and_training_until_the_input_ends(tmp_path):
    model = Model()
    params = {"learning_rate": 0.1, "nested": {"k": [1]}}
    estimator = tec.Estimator(model.model_fn, model_dir=str(tmp_path), params=params)
    assert estimator.params == params and estimator.params is not params
    estimator.train(model.input_fn)  # steps=None: 40 examples / 10 = 4 steps
    assert estimator.get_variable_value("global_step") == 4
    assert model.input_fn_params == [params]  # no batch_size, context or use_tpu
    assert model.model_fn_params and all(p == params for p in model.model_fn_params)


def namespace_model_fn(features, labels, mode, params):
    weight = v1.get_variable("w", [1, 1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], weight) - labels))
    train_op = v1.train.GradientDescentOptimizer(params.learning_rate).minimize(
        loss, v1.train.get_global_step())
    return tec.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_params_may_be_any_object_as_the_originals_estimator_took(tmp_path):
    # lukasturcani/dnn passes its argparse Namespace as params and reads params.learning_rate
    params = argparse.Namespace(learning_rate=0.01)
    estimator = tec.Estimator(namespace_model_fn, model_dir=str(tmp_path), params=params)
    assert vars(estimator.params) == vars(params) and estimator.params is not params
    x = np.arange(8, dtype=np.float32).reshape(8, 1)
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, 2 * x)).batch(4),
                    max_steps=2)
    # batches 0..3 then 4..7 from w = 0: w = 0.01 * 14 = 0.14, then 0.14 + 0.01 * 117.18
    # (the original's 1.3118000030517578)
    assert estimator.get_variable_value("w")[0, 0] == np.float32(1.3118)
    assert (tmp_path / "model.ckpt-2.meta").exists()  # the TRAIN graph, built with the params


def test_one_step_per_loop_hooks_and_exact_checkpoint_steps(tmp_path):
    model = Model()
    config = tec.RunConfig(save_checkpoints_steps=3, keep_checkpoint_max=0)
    estimator = tec.Estimator(model.model_fn, model_dir=str(tmp_path), config=config,
                              params={"learning_rate": 0.1})
    estimator.train(repeated_input_fn, steps=7)
    # once per step, with the global step read before the step's increment (as TF1's
    # Session.run read it, see test_tf1_graph_semantics)
    assert model.step_hook.after_run_steps == list(range(0, 7))
    assert checkpoint_steps(tmp_path) == [0, 3, 6, 7]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    model = Model()
    estimator = tec.Estimator(model.model_fn, model_dir=str(tmp_path_factory.mktemp("plain")),
                              params={"learning_rate": 0.1})
    estimator.train(repeated_input_fn, steps=6)
    return estimator


@pytest.mark.slow  # trains or evaluates for several seconds
def test_evaluate_runs_the_whole_input_with_eval_metric_ops(trained):
    results = trained.evaluate(finite_input_fn)
    errors = numpy_predictions(trained) - TARGETS
    assert results["global_step"] == 6
    np.testing.assert_allclose(results["mae"], np.mean(np.abs(errors)), rtol=1e-5)
    np.testing.assert_allclose(results["loss"], np.mean(errors ** 2), rtol=1e-5)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        trained.evaluate(finite_input_fn, steps=0)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_predict_yields_every_example_in_order(trained):
    predictions = list(trained.predict(predict_input_fn))
    assert len(predictions) == len(FEATURES)  # batches of 7: the last one has 5
    np.testing.assert_allclose([p["x0"] for p in predictions], FEATURES[:, 0])
    np.testing.assert_allclose([p["y"] for p in predictions], numpy_predictions(trained)[:, 0],
                               rtol=1e-5, atol=1e-6)
    only_y = list(trained.predict(predict_input_fn, predict_keys="y",
                                  yield_single_examples=False))
    assert [sorted(batch) for batch in only_y] == [["y"]] * 6


def test_export_passes_params_as_given(trained, tmp_path):
    seen = []
    estimator = tec.Estimator(
        lambda features, labels, mode, params: seen.append(params) or trained.model_fn(
            features, labels, mode, params),
        model_dir=trained.model_dir, params={"learning_rate": 0.1})
    receiver_fn = receivers.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 3], tf.float32)})
    path = estimator.export_saved_model(str(tmp_path), receiver_fn)
    assert seen == [{"learning_rate": 0.1}]
    serving = tf.saved_model.load(path.decode(), tags=["serve"]).signatures["serving_default"]
    np.testing.assert_allclose(serving(x=tf.constant(FEATURES))["y"].numpy(),
                               numpy_predictions(trained)[:, 0], rtol=1e-5, atol=1e-6)


def shared_model_fn(features, labels, mode, params):
    """A legacy TPU model_fn, also used by a CPU Estimator through as_estimator_spec()."""
    with v1.variable_scope("dense"):
        kernel = v1.get_variable("kernel", [3, 1], initializer=v1.ones_initializer())
        bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
    logits = tf.matmul(features["x"], kernel) + bias
    if mode == tec.ModeKeys.PREDICT:
        spec = tec.TPUEstimatorSpec(mode, predictions={"y": logits[:, 0]})
    else:
        loss = v1.losses.mean_squared_error(labels, logits)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05))
        spec = tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, global_step=v1.train.get_global_step()))
    return spec if "use_tpu" in params else spec.as_estimator_spec()


@pytest.mark.slow  # trains or evaluates for several seconds
def test_cpu_estimator_predicts_from_a_tpu_estimators_checkpoint(tmp_path, eight_devices):
    config = tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices)
    tpu_estimator = tec.TPUEstimator(shared_model_fn, config=config, train_batch_size=16)
    assert isinstance(tpu_estimator, tec.Estimator)

    def train_input_fn(params):
        return finite_input_fn().unbatch().repeat().batch(params["batch_size"],
                                                          drop_remainder=True)

    tpu_estimator.train(train_input_fn, steps=4)
    cpu_estimator = tec.Estimator(shared_model_fn, model_dir=str(tmp_path))
    predictions = np.array([p["y"] for p in cpu_estimator.predict(predict_input_fn)])
    kernel = tpu_estimator.get_variable_value("dense/kernel")
    bias = tpu_estimator.get_variable_value("dense/bias")
    assert not np.allclose(kernel, 1.0)  # trained
    np.testing.assert_allclose(predictions, (FEATURES @ kernel + bias)[:, 0], rtol=1e-5,
                               atol=1e-6)


def test_estimator_rejects_tpu_specs_and_bad_configs(tmp_path):
    def tpu_spec_model_fn(features, labels, mode):
        return tec.TPUEstimatorSpec(mode, predictions={"x": features["x"]})

    estimator = tec.Estimator(tpu_spec_model_fn, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec"):
        next(estimator.predict(predict_input_fn))
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        tec.Estimator(tpu_spec_model_fn, config={"model_dir": str(tmp_path)})
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        estimator.train(finite_input_fn, steps=1, max_steps=2)
