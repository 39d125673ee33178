"""`tf.keras.estimator.model_to_estimator` (keras_estimator.py): the original's numbers
(tests/data/keras_estimator_reference.py, run on TF 2.15 + estimator 2.15), its errors, and
where it is served (tf.keras.estimator in the v1 and v2 namespaces)."""
import importlib.util
import json
import pathlib

import numpy as np
import pytest
import tf_keras

import tpu_estimator_compat.v1 as tf
import tpu_estimator_compat.v2 as tf2

_DATA = pathlib.Path(__file__).parent / "data"


def _reference_module():
    spec = importlib.util.spec_from_file_location(
        "keras_estimator_reference", _DATA / "keras_estimator_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_close(actual, expected, path=""):
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected), path
        for key in expected:
            _assert_close(actual[key], expected[key], f"{path}/{key}")
    elif isinstance(expected, list) and expected and isinstance(expected[0], dict):
        assert len(actual) == len(expected), path
        for index, (a, e) in enumerate(zip(actual, expected)):
            _assert_close(a, e, f"{path}/{index}")
    else:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-5, err_msg=path)


def _expected(name):
    expected = {}
    for line in (_DATA / name).read_text().splitlines():
        expected.update(json.loads(line))
    return expected


def test_weights_metrics_and_predictions_are_the_originals():
    """TF 2.x code (`tpu_estimator_compat.v2`) against TF 2.15's tf.keras.estimator."""
    expected = _expected("keras_estimator_reference.jsonl")
    actual = _reference_module().scenarios(tf2, tf_keras)
    _assert_close(actual, expected)
    # The warm start: before any training, predictions are the Keras model's.
    assert actual["sequential"]["predict_before"] == expected["sequential"]["predict_before"]


def test_tf1_code_with_a_tf_train_optimizer_gets_tf1s_numbers_and_metric_names():
    """TF 1.x code (`tpu_estimator_compat.v1`) against TF 2.15's tf.compat.v1 in graph mode:
    a tf.train optimizer, 'mae' reported as mean_absolute_error, name-based checkpoints."""
    actual = _reference_module().tf1_scenarios(tf)
    _assert_close(actual, _expected("keras_estimator_reference_tf1.jsonl"))


def _compiled_model(**compile_args):
    model = tf_keras.Sequential([tf_keras.layers.Dense(2, input_shape=(3,), name="d")])
    if compile_args:
        model.compile(**compile_args)
    return model


@pytest.mark.parametrize("kwargs, message", [
    ({}, "Either `keras_model` or `keras_model_path` needs to be provided."),
    ({"keras_model": "model", "keras_model_path": "path"},
     "Please specity either `keras_model` or `keras_model_path`, but not both."),
])
def test_model_arguments_errors_are_the_originals(kwargs, message):
    with pytest.raises(ValueError) as error:
        tf.keras.estimator.model_to_estimator(**kwargs)
    assert str(error.value) == message


def test_uncompiled_model_and_bad_checkpoint_format_errors_are_the_originals(tmp_path):
    with pytest.raises(ValueError) as error:
        tf.keras.estimator.model_to_estimator(_compiled_model(), model_dir=str(tmp_path))
    assert str(error.value) == (
        "The given keras model has not been compiled yet. Please compile the model with "
        "`model.compile()` before calling `model_to_estimator()`.")
    with pytest.raises(ValueError) as error:
        tf.keras.estimator.model_to_estimator(
            _compiled_model(optimizer="sgd", loss="mse"), model_dir=str(tmp_path),
            checkpoint_format="h5")
    assert str(error.value) == 'Checkpoint format must be one of "checkpoint" or "saver". Got h5'


def test_features_missing_an_input_name_is_the_originals_error(tmp_path):
    estimator = tf.keras.estimator.model_to_estimator(
        _compiled_model(optimizer="sgd", loss="mse"), model_dir=str(tmp_path))
    assert tf.train.list_variables(str(tmp_path / "keras")) == [("d/bias", [2]),
                                                                ("d/kernel", [3, 2])]

    def input_fn():
        return tf.data.Dataset.from_tensors(({"x": np.zeros((2, 3), np.float32)},
                                             np.zeros((2, 2), np.float32)))
    with pytest.raises(KeyError) as error:
        estimator.train(input_fn, steps=1)
    assert ("The dictionary passed into features does not cover requested inputs keys "
            "defined in the keras model.\n\tExpected keys: {'d_input'}\n\tfeatures keys: "
            "{'x'}\n\tMissed keys: {'d_input'}") in str(error.value)


def test_served_as_tf_keras_estimator_in_v1_and_v2():
    from tpu_estimator_compat import keras_estimator  # pylint: disable=import-outside-toplevel
    assert tf.keras.estimator.model_to_estimator is keras_estimator.tf1_model_to_estimator
    assert tf2.keras.estimator.model_to_estimator is keras_estimator.model_to_estimator
    assert tf2.compat.v1.keras.estimator.model_to_estimator is (
        keras_estimator.tf1_model_to_estimator)
    # The rest of v2's tf.keras stays tf_keras' (Keras 2).
    assert tf2.keras.Sequential is tf_keras.Sequential
    assert tf2.keras.layers is tf_keras.layers


def test_a_saved_model_export_and_a_model_saved_to_a_path(tmp_path):
    """From `keras_model_path` (an HDF5 file, as model.save wrote it): the estimator starts
    at the saved weights; after training, its SavedModel export's default signature
    predicts as predict()."""
    model = _compiled_model(optimizer="sgd", loss="mse")
    model.set_weights([np.full((3, 2), 0.25, np.float32), np.array([0.5, -0.5], np.float32)])
    model.save(str(tmp_path / "model.h5"))
    features = np.arange(12, dtype=np.float32).reshape(4, 3) / 12
    # Before the conversion: as in TF 2.15, models made before it are unusable after it.
    expected = model.predict(features, verbose=0)
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model_path=str(tmp_path / "model.h5"), model_dir=str(tmp_path / "est"))

    def predict_input_fn():
        return tf.data.Dataset.from_tensor_slices({"d_input": features}).batch(4)

    def predicted():
        return np.stack([p["d"] for p in estimator.predict(predict_input_fn)])
    np.testing.assert_allclose(predicted(), expected, atol=1e-6)
    estimator.train(lambda: tf.data.Dataset.from_tensors(
        ({"d_input": features}, np.ones((4, 2), np.float32))), steps=1)
    trained = predicted()
    assert np.abs(trained - expected).max() > 1e-3

    def receiver():
        x = tf.placeholder(tf.float32, [None, 3])
        return tf.estimator.export.ServingInputReceiver({"d_input": x}, {"d_input": x})
    export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver)
    outputs = tf.contrib.predictor.from_saved_model(export_dir)({"d_input": features})
    np.testing.assert_allclose(outputs["d"], trained, atol=1e-6)


def test_check_calls_it_this_packages_in_tf1_and_tf2_code():
    """`check` judges tf.keras.estimator as the package serves it, also in TF2 code (where
    it is not TensorFlow's own: tf_keras' needs tensorflow_estimator)."""
    from tpu_estimator_compat.cli import check  # pylint: disable=import-outside-toplevel
    resolver = check.Resolver()
    for verdict in (resolver.verdict, resolver.tf2_verdict):
        assert verdict("tensorflow.keras.estimator.model_to_estimator").status == "supported"
    assert resolver.tf2_verdict("tensorflow.keras.Sequential").status == "tf2"


def test_a_subclassed_model_gets_a_features_dict_as_is_and_output_1(tmp_path):
    """A subclassed model (no input names): the features dict reaches its call() as it is,
    its output is `output_1`; TF 2.x's default object-based checkpoints refuse it with the
    original's error (TF 2.15 itself fails on eager-built subclassed models: no numbers to
    compare)."""
    class TwoInputs(tf_keras.Model):  # pylint: disable=abstract-method
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = tf_keras.layers.Dense(1, kernel_initializer="ones", name="dense")

        def call(self, inputs, training=None):  # pylint: disable=arguments-differ
            return self.dense(inputs["a"] - inputs["b"])

        def get_config(self):
            return {}

    model = TwoInputs(name="two_inputs")
    model.compile(tf_keras.optimizers.legacy.SGD(0.1), "mse")
    with pytest.raises(ValueError) as error:
        tf2.keras.estimator.model_to_estimator(model, model_dir=str(tmp_path / "a"))
    assert str(error.value) == ("Object-based checkpoints are currently not supported with "
                                "subclassed models.")
    estimator = tf.keras.estimator.model_to_estimator(model, model_dir=str(tmp_path / "b"))
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    features = {"a": a, "b": np.ones_like(a)}
    estimator.train(lambda: tf.data.Dataset.from_tensors(
        (features, np.zeros((2, 1), np.float32))), steps=1)
    kernel = estimator.get_variable_value("two_inputs/dense/kernel")
    bias = estimator.get_variable_value("two_inputs/dense/bias")
    (prediction,) = [p for _, p in zip(range(1), estimator.predict(
        lambda: tf.data.Dataset.from_tensors(features)))]
    assert sorted(prediction) == ["output_1"]
    np.testing.assert_allclose(prediction["output_1"], (a[0] - 1) @ kernel + bias, atol=1e-6)
    # One SGD step on mse from kernel ones, bias zero: the gradient of mean((xw + b)^2).
    x = a - 1
    residual = x @ np.ones((2, 1), np.float32)
    np.testing.assert_allclose(kernel, 1 - 0.1 * 2 * x.T @ residual / 2, atol=1e-6)
