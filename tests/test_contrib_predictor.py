"""`tf.contrib.predictor` (rebuilt_apis/contrib_predictor.py): predictors of a SavedModel
this package exported and of an estimator give the estimator's predict() values; TF 1.15's
errors."""
import numpy as np
import pytest

import tpu_estimator_compat.v1 as tf

_X = np.random.RandomState(0).rand(6, 3).astype(np.float32)
_Y = np.array([0, 1, 0, 1, 1, 0])


def _model_fn(features, labels, mode):
    w = tf.get_variable("w", [3, 2], initializer=tf.constant_initializer(0.5))
    logits = tf.matmul(features["x"], w)
    predictions = {"logits": logits, "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            "serving_default": tf.estimator.export.PredictOutput(predictions),
            "scores": tf.estimator.export.PredictOutput({"p": predictions["probabilities"]})})
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
        loss, tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _receiver():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


@pytest.fixture(scope="module", name="trained")
def _trained(tmp_path_factory):
    estimator = tf.estimator.Estimator(_model_fn, model_dir=str(tmp_path_factory.mktemp("m")))
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(3)
                    .repeat(), steps=5)
    predicted = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": _X}).batch(6)))
    export_dir = estimator.export_saved_model(str(tmp_path_factory.mktemp("export")),
                                              _receiver)
    return estimator, predicted, export_dir


def _stacked(predicted, key):
    return np.stack([p[key] for p in predicted])


def test_from_saved_model_gives_the_estimators_predictions(trained):
    _, predicted, export_dir = trained
    predictor = tf.contrib.predictor.from_saved_model(export_dir)
    outputs = predictor({"x": _X})
    assert sorted(outputs) == ["logits", "probabilities"]
    np.testing.assert_allclose(outputs["logits"], _stacked(predicted, "logits"), atol=1e-6)
    # Another signature by key, and tensors by name.
    scores = tf.contrib.predictor.from_saved_model(export_dir, signature_def_key="scores")
    np.testing.assert_allclose(scores({"x": _X})["p"], _stacked(predicted, "probabilities"),
                               atol=1e-6)
    named = tf.contrib.predictor.from_saved_model(
        export_dir, input_names={"in": "x:0"},
        output_names={"out": predictor.fetch_tensors["logits"].name})
    np.testing.assert_allclose(named({"in": _X})["out"], outputs["logits"], atol=1e-6)


def test_from_estimator_gives_the_estimators_predictions(trained):
    estimator, predicted, _ = trained
    predictor = tf.contrib.predictor.from_estimator(estimator, _receiver)
    assert repr(predictor).startswith("CoreEstimatorPredictor with feed tensors {'x': ")
    np.testing.assert_allclose(predictor({"x": _X})["probabilities"],
                               _stacked(predicted, "probabilities"), atol=1e-6)
    with pytest.raises(KeyError, match="output_key must be one of dict_keys"):
        tf.contrib.predictor.from_estimator(estimator, _receiver, output_key="nope")


def test_errors_are_tf115s(trained):
    estimator, _, export_dir = trained
    with pytest.raises(ValueError) as error:
        tf.contrib.predictor.from_saved_model(export_dir, signature_def_key="bad")
    # The signatures in the SavedModel's (protocol buffer map) order, as TF 1.15 listed them.
    assert str(error.value) in [f'Got signature_def_key "bad". Available signatures are '
                                f"{keys}. Original error:\n'bad'" for keys in (
                                    ["scores", "serving_default"],
                                    ["serving_default", "scores"])]
    with pytest.raises(ValueError, match="input_names and output_names must both be "):
        tf.contrib.predictor.from_saved_model(export_dir, input_names={"x": "x:0"})
    predictor = tf.contrib.predictor.from_saved_model(export_dir)
    with pytest.raises(ValueError) as error:
        predictor({"x": _X, "y": _X})
    assert str(error.value) == "Got unexpected keys in input_dict: {'y'}"
    with pytest.raises(TypeError, match="You likely want to call from_estimator."):
        tf.contrib.predictor.from_contrib_estimator(estimator, _receiver)


def test_a_classifiers_parsing_export_predicts_serialized_examples(tmp_path):
    """As census wide & deep's predict script: the classification signature of a canned
    classifier's parsing export, fed serialized tf.train.Examples under 'inputs'."""
    column = tf.feature_column.numeric_column("x", shape=[3])
    estimator = tf.estimator.LinearClassifier([column], model_dir=str(tmp_path / "m"))
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(3)
                    .repeat(), steps=5)
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec([column]))
    predictor = tf.contrib.predictor.from_saved_model(
        estimator.export_saved_model(str(tmp_path / "export"), receiver))
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()
                for row in _X]
    outputs = predictor({"inputs": examples})
    predicted = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": _X}).batch(6)))
    np.testing.assert_allclose(outputs["scores"], _stacked(predicted, "probabilities"),
                               atol=1e-6)
    assert outputs["classes"].tolist() == [[b"0", b"1"]] * len(_X)
