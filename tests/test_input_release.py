"""Each call's input iterator is autotuned as TensorFlow makes it and destroyed off the
caller's thread: TensorFlow 2.21's autotuning thread can hold an iterator's destruction for
up to a minute (`engine/input_release.py`), which the call must not wait for."""
import threading
import weakref

import numpy as np
import pytest
import tensorflow as tf

import helpers
import tpu_estimator_compat as tec
from tpu_estimator_compat.engine import input_release
from tpu_estimator_compat.engine import inputs

v1 = tf.compat.v1


class _Finalization:
    """Which thread finalizes an object."""

    def __init__(self, obj):
        self._done = threading.Event()
        self._thread_name = None
        self._ref = weakref.ref(obj, self._finalized)

    def _finalized(self, _):
        self._thread_name = threading.current_thread().name
        self._done.set()

    def thread_name(self, timeout=60):
        assert self._done.wait(timeout), "the iterator was never destroyed"
        return self._thread_name


def test_leaving_the_block_destroys_the_iterator_on_a_thread_of_its_own():
    iterator = iter(tf.data.Dataset.range(10)
                    .map(lambda x: x + 1, num_parallel_calls=tf.data.AUTOTUNE)
                    .prefetch(tf.data.AUTOTUNE))
    finalization = _Finalization(iterator)
    call_input = input_release.CallInput(iterator)
    del iterator
    with call_input:
        assert int(next(call_input.iterator)) == 1
    assert call_input.iterator is None
    assert finalization.thread_name() == "input_iterator_release"


def _model_fn(features, labels, mode, params):
    del params
    score = tf.matmul(features, v1.get_variable("w", [4, 1],
                                                initializer=v1.constant_initializer(0.5)))
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={"score": score})
    loss = v1.losses.mean_squared_error(labels, score)
    return helpers.sgd_spec(mode, loss)


def _input_fn(params, repeat=True):
    dataset = tf.data.Dataset.from_tensor_slices((helpers.FEATURES, helpers.TARGETS))
    dataset = dataset.repeat() if repeat else dataset
    return (dataset.map(lambda x, y: (x * 2.0, y), num_parallel_calls=tf.data.AUTOTUNE)
            .batch(params["batch_size"], drop_remainder=True).prefetch(tf.data.AUTOTUNE))


@pytest.mark.slow
def test_train_evaluate_and_predict_autotune_their_input_and_destroy_it_off_their_thread(
        tmp_path, eight_devices, monkeypatch):
    made = []  # (autotune option of the iterator's dataset, its finalization) per call
    distributed_iterator = inputs.distributed_iterator

    def recorded(*args, **kwargs):
        iterator = distributed_iterator(*args, **kwargs)
        made.append((iterator._dataset.options().autotune.enabled,  # pylint: disable=protected-access
                     _Finalization(iterator)))
        return iterator
    monkeypatch.setattr(inputs, "distributed_iterator", recorded)

    estimator = helpers.make_estimator(tmp_path, eight_devices, model=_model_fn, use_tpu=True,
                                       batch_size=16)
    estimator.train(_input_fn, steps=4)
    loss = estimator.evaluate(lambda params: _input_fn(params, repeat=False))["loss"]
    predictions = list(estimator.predict(lambda params: _input_fn(params, repeat=False)))

    assert np.isfinite(loss) and len(predictions) == helpers.NUM_EXAMPLES
    assert [autotune for autotune, _ in made] == [None] * 3  # TensorFlow's default: on
    assert [finalization.thread_name() for _, finalization in made] == [
        "input_iterator_release"] * 3
