"""use_tpu=True on a machine without a TPU fails at once with the resolver's message, also
when TF_CONFIG describes several workers (RunConfig's `master` is then this task's own
grpc address, which is a worker, not a TPU: connecting to it as one waited forever)."""
import json
import time

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import cluster_resolver

_NO_TPU = ("No TPU found: TPUClusterResolver(tpu='', zone=None, project=None) (no TPU name "
           "given, and none of $TPU_NAME, $KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS, $TPU_CONFIG is "
           "set); looking up the TPU failed with ValueError: Please provide a TPU Name to "
           "connect to. To run without a TPU, pass `use_tpu=False` to TPUEstimator")


def _model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features)
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=tf.compat.v1.assign_add(
        tf.compat.v1.train.get_global_step(), 1))


def _input_fn(params):
    return tf.data.Dataset.from_tensors(np.ones([params["batch_size"], 2], np.float32)).repeat()


@pytest.mark.parametrize("workers", [0, 2])
def test_use_tpu_without_a_tpu_fails_with_the_resolvers_message(tmp_path, monkeypatch, workers):
    for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG", "TF_CONFIG",
                 cluster_resolver.SIMULATED_TPU_CORES_ENV):
        monkeypatch.delenv(name, raising=False)
    if workers:
        monkeypatch.setenv("TF_CONFIG", json.dumps({
            "cluster": {"worker": [f"127.0.0.1:{23456 + i}" for i in range(workers)]},
            "task": {"type": "worker", "index": 0}}))
    config = tec.RunConfig(model_dir=str(tmp_path))
    assert config.master == ("grpc://127.0.0.1:23456" if workers else "")
    estimator = tec.TPUEstimator(_model_fn, config=config, use_tpu=True, train_batch_size=8)
    start = time.monotonic()
    with pytest.raises(cluster_resolver.NoTPUFoundError) as raised:
        estimator.train(_input_fn, max_steps=1)
    assert time.monotonic() - start < cluster_resolver.DEFAULT_LOOKUP_TIMEOUT_SECS
    assert str(raised.value).startswith(_NO_TPU)


def _predict_model_fn(features, labels, mode, params):
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={"sum": tf.reduce_sum(features, 1)})
    return _model_fn(features, labels, mode, params)


def test_use_tpu_false_never_looks_a_tpu_up(tmp_path, monkeypatch):
    """ResNet-style programs build `RunConfig(cluster=TPUClusterResolver(FLAGS.tpu or ''))`
    whatever `--use_tpu` says; with use_tpu=False, train, evaluate, predict, export and
    train_and_evaluate never ask it for the TPU (issue 19, item 4: export failed with
    NoTPUFoundError from `session_config`)."""
    for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG", "TF_CONFIG",
                 cluster_resolver.SIMULATED_TPU_CORES_ENV):
        monkeypatch.delenv(name, raising=False)
    lookups = []

    def resolve(self):
        lookups.append(self)
        raise cluster_resolver.NoTPUFoundError("looked up")

    monkeypatch.setattr(cluster_resolver.TPUClusterResolver, "resolve", resolve)
    config = tec.RunConfig(model_dir=str(tmp_path / "model"),
                           cluster=cluster_resolver.TPUClusterResolver(tpu=""))
    estimator = tec.TPUEstimator(_predict_model_fn, config=config, use_tpu=False,
                                 train_batch_size=4, eval_batch_size=4, predict_batch_size=4)
    estimator.train(_input_fn, max_steps=2)
    assert estimator.evaluate(_input_fn, steps=1)["global_step"] == 2
    predictions = list(estimator.predict(
        lambda params: tf.data.Dataset.from_tensors(np.ones([2, 2], np.float32))))
    assert [float(p["sum"]) for p in predictions] == [2.0, 2.0]

    def serving_input_receiver_fn():
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        return tec.export.TensorServingInputReceiver(x, {"x": x})

    export_dir = estimator.export_saved_model(str(tmp_path / "export"),
                                              serving_input_receiver_fn)
    assert tf.io.gfile.exists(tf.io.gfile.join(export_dir, b"saved_model.pb"))
    results, _ = tec.train_and_evaluate(estimator, tec.TrainSpec(_input_fn, max_steps=3),
                                        tec.EvalSpec(_input_fn, steps=1, throttle_secs=0))
    assert results["global_step"] == 3
    assert lookups == []
