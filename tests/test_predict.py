"""TPUEstimator.predict: every example once, in order; and export matching predict()."""
import functools
import logging
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import tensorflow as tf

import helpers
import tpu_estimator_compat as tec
from tpu_estimator_compat.export import receivers

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

v1 = tf.compat.v1
NUM_EXAMPLES = 37
FEATURES = np.random.RandomState(3).randn(NUM_EXAMPLES, 4).astype(np.float32)


def predict_input_fn(params):
    return tf.data.Dataset.from_tensor_slices({"x": FEATURES}).batch(params["batch_size"])


def train_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, FEATURES[:, :1])).repeat().batch(
        params["batch_size"], drop_remainder=True)


def model_fn(features, labels, mode, params):
    hidden = tf.nn.relu(tf.matmul(features["x"], v1.get_variable(
        "hidden", [4, 8], initializer=v1.random_normal_initializer(seed=1))))
    score = tf.matmul(hidden, v1.get_variable(
        "out", [8, 1], initializer=v1.random_normal_initializer(seed=2)))
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={
            "score": score, "index": tf.cast(tf.round(features["x"][:, 0] * 1000), tf.int64)})
    loss = v1.losses.mean_squared_error(labels, score)
    return helpers.sgd_spec(mode, loss)


make_estimator = functools.partial(helpers.make_estimator, model=model_fn, batch_size=16,
                                   eval_batch_size=None)


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory, one_device):
    model_dir = tmp_path_factory.mktemp("trained")
    make_estimator(model_dir, one_device).train(train_input_fn, steps=3)
    return model_dir


def test_eight_devices_predict_every_example_in_order(trained_dir, one_device, eight_devices):
    one = list(make_estimator(trained_dir, one_device).predict(predict_input_fn))
    eight = list(make_estimator(trained_dir, eight_devices).predict(predict_input_fn))
    assert len(one) == len(eight) == NUM_EXAMPLES
    expected_index = np.round(FEATURES[:, 0] * 1000).astype(np.int64)
    np.testing.assert_array_equal([p["index"] for p in eight], expected_index)
    np.testing.assert_allclose([p["score"] for p in eight], [p["score"] for p in one],
                               atol=1e-6)


def test_predict_keys_batches_and_errors(trained_dir, one_device):
    estimator = make_estimator(trained_dir, one_device)
    only_score = list(estimator.predict(predict_input_fn, predict_keys=["score"]))
    assert set(only_score[0]) == {"score"} and only_score[0]["score"].shape == (1,)
    batches = list(estimator.predict(predict_input_fn, yield_single_examples=False))
    assert [len(b["index"]) for b in batches] == [16, 16, 5]
    with pytest.raises(ValueError, match="Expected to run at least one output from"):
        next(estimator.predict(predict_input_fn, predict_keys=["missing"]))


def test_tpu_predict_needs_a_dataset_and_dict_predictions(trained_dir, one_device):
    estimator = make_estimator(trained_dir, one_device)
    with pytest.raises(TypeError, match="For mode PREDICT, `input_fn` must return `Dataset`"):
        next(estimator.predict(lambda params: {"x": tf.constant(FEATURES[:16])}))

    def tensor_model_fn(features, labels, mode, params):
        return tec.TPUEstimatorSpec(mode, predictions=features["x"])

    config = tec.RunConfig(model_dir=str(trained_dir), train_distribute=one_device)
    estimator = tec.TPUEstimator(tensor_model_fn, config=config, train_batch_size=16,
                                 predict_batch_size=16)
    with pytest.raises(TypeError, match="TPUEstimatorSpec.predictions must be dict of Tensors"):
        next(estimator.predict(predict_input_fn))


def test_cpu_path_non_dict_predictions(tmp_path):
    def tensor_model_fn(features, labels, mode, params):
        return tec.EstimatorSpec(mode, predictions=features["x"] * 2.0)

    estimator = tec.TPUEstimator(tensor_model_fn, config=tec.RunConfig(model_dir=str(tmp_path)),
                                 use_tpu=False, predict_batch_size=10)
    predictions = list(estimator.predict(predict_input_fn))
    np.testing.assert_allclose(predictions, FEATURES * 2.0)
    with pytest.raises(ValueError, match="predict_keys argument is not valid"):
        list(estimator.predict(predict_input_fn, predict_keys=["x"]))


def test_no_checkpoint_predicts_from_initial_values_with_a_log(tmp_path, one_device, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    predictions = list(make_estimator(tmp_path, one_device).predict(predict_input_fn))
    assert len(predictions) == NUM_EXAMPLES
    assert "Could not find trained model in model_dir" in caplog.text


def test_stopping_the_generator_early_leaves_no_threads(trained_dir, eight_devices):
    estimator = make_estimator(trained_dir, eight_devices)
    list(estimator.predict(predict_input_fn))  # warm up: compile once
    threads_before = threading.active_count()
    generator = estimator.predict(predict_input_fn)
    next(generator)
    generator.close()
    assert threading.active_count() == threads_before


def test_export_serves_what_predict_predicts(trained_dir, one_device, tmp_path):
    estimator = make_estimator(trained_dir, one_device)
    expected = np.array([p["score"] for p in estimator.predict(predict_input_fn)])
    raw = receivers.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 4], tf.float32)})
    export_dir = estimator.export_saved_model(str(tmp_path / "export"), raw)
    assert isinstance(export_dir, bytes)
    np.save(tmp_path / "inputs.npy", FEATURES)
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf
        model = tf.saved_model.load({export_dir.decode()!r}, tags=["serve"])
        out = model.signatures["serving_default"](x=tf.constant(np.load({str(tmp_path / "inputs.npy")!r})))
        np.save({str(tmp_path / "served.npy")!r}, out["score"].numpy())
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "served.npy"), expected, atol=1e-5)


@pytest.mark.parametrize("examples", [10, 12])  # a padded last batch, and none
def test_predictions_with_k_rows_per_example_off_the_tpu(tmp_path, examples):
    """BERT token taggers flatten [batch, tokens] predictions to one row per token. The
    original (use_tpu=False, predict_batch_size=4, 10 examples of 2 values) yielded every row
    of every batch in order: 0.0 ... 19.0."""
    features = np.arange(2 * examples, dtype=np.float32).reshape(examples, 2)

    def model_fn(features, labels, mode, params):
        weight = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        return tec.TPUEstimatorSpec(mode, predictions={"flat": tf.reshape(features * weight,
                                                                         [-1])})

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, predict_batch_size=4,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    rows = [float(p["flat"]) for p in estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices(features).batch(params["batch_size"]))]
    assert rows == [float(v) for v in range(2 * examples)]


@pytest.mark.parametrize("use_tpu", [True, False])
def test_predict_yields_from_an_endless_input(trained_dir, one_device, use_tpu):
    estimator = make_estimator(trained_dir, one_device, use_tpu=use_tpu)
    expected = [p["index"] for p in estimator.predict(predict_input_fn)]

    def endless_input_fn(params):
        return predict_input_fn(params).repeat()

    predictions = estimator.predict(endless_input_fn)
    assert next(predictions)["index"] == expected[0]
    rest = [next(predictions)["index"] for _ in range(2 * NUM_EXAMPLES - 1)]
    predictions.close()
    assert rest == expected[1:] + expected
