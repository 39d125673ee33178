"""train_and_evaluate, and alternating train()/evaluate() on one estimator."""
import collections
import os

import numpy as np
import pytest
import tensorflow as tf

import helpers
import tpu_estimator_compat as tec
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.export import receivers
from tpu_estimator_compat.train_and_evaluate_tasks import FinalExporter, LatestExporter

pytestmark = pytest.mark.slow  # estimator runs (and processes): seconds each

v1 = tf.compat.v1
FEATURES = np.random.RandomState(11).randn(24, 2).astype(np.float32)
TARGETS = (FEATURES @ np.array([[2.0], [-1.0]]) + 0.3).astype(np.float32)


def train_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def eval_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(({"x": FEATURES}, TARGETS)).batch(
        params["batch_size"])


def serving_input_receiver_fn():
    return receivers.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 2], tf.float32)})()


def metric_fn(labels, predictions):
    return {"mae": v1.metrics.mean_absolute_error(labels, predictions)}


class Model:
    """A linear model_fn that counts how often each mode is traced."""

    def __init__(self):
        self.traces = collections.Counter()

    def __call__(self, features, labels, mode, params):
        self.traces[mode] += 1
        weights = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
        predictions = tf.matmul(features["x"], weights)
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"y": predictions})
        loss = v1.losses.mean_squared_error(labels, predictions)
        if mode == tec.ModeKeys.EVAL:
            return tec.TPUEstimatorSpec(mode, loss=loss,
                                        eval_metrics=(metric_fn, [labels, predictions]))
        return helpers.sgd_spec(mode, loss)


def make_estimator(model_dir, strategy, model=None, **config_kwargs):
    return helpers.make_estimator(model_dir, strategy, model or Model(), export_to_tpu=False,
                                  save_checkpoints_steps=4, keep_checkpoint_max=0,
                                  **config_kwargs)


class EvalStepHook(v1.train.SessionRunHook):
    """Records the global step of every evaluation it is part of (and, after each, how many
    times `model` was traced in EVAL mode)."""

    def __init__(self, model=None):
        self.steps, self.eval_traces = [], []
        self.model = model

    def after_create_session(self, session, coord):
        self.steps.append(int(session.run(v1.train.get_global_step())))

    def end(self, session):
        if self.model is not None:
            self.eval_traces.append(self.model.traces[tec.ModeKeys.EVAL])


class RecordingExporter:
    name = "recording"

    def __init__(self):
        self.calls = []

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        self.calls.append((os.path.basename(checkpoint_path), is_the_final_export,
                           eval_result["global_step"], export_path))
        return f"exported-{eval_result['global_step']}"


@pytest.fixture(name="restores")
def fixture_restores(monkeypatch):
    """The checkpoint paths `checkpoints.restore` reads, in order."""
    paths = []
    original = checkpoints.restore

    def counting_restore(named_variables, checkpoint_path):
        paths.append(os.path.basename(checkpoint_path))
        return original(named_variables, checkpoint_path)

    monkeypatch.setattr(checkpoints, "restore", counting_restore)
    return paths


def test_evaluates_after_every_new_checkpoint_and_exports(tmp_path, one_device, restores):
    model = Model()
    estimator = make_estimator(tmp_path, one_device, model)
    eval_hook, recorder = EvalStepHook(model), RecordingExporter()
    final = FinalExporter("final", serving_input_receiver_fn)
    eval_result, export_results = tec.train_and_evaluate(
        estimator, tec.TrainSpec(train_input_fn, max_steps=12),
        tec.EvalSpec(eval_input_fn, steps=None, hooks=[eval_hook],
                     exporters=[recorder, final], throttle_secs=0))

    assert eval_hook.steps == [4, 8, 12]  # not the initial checkpoint 0
    export_dir = os.path.join(str(tmp_path), "export")
    assert recorder.calls == [
        ("model.ckpt-4", False, 4, os.path.join(export_dir, "recording")),
        ("model.ckpt-8", False, 8, os.path.join(export_dir, "recording")),
        ("model.ckpt-12", True, 12, os.path.join(export_dir, "recording"))]
    assert eval_result["global_step"] == 12
    weights = estimator.get_variable_value("w")
    np.testing.assert_allclose(eval_result["mae"], np.mean(np.abs(FEATURES @ weights - TARGETS)),
                               rtol=1e-5)
    assert export_results[0] == "exported-12"
    final_path = export_results[1].decode()
    assert os.path.dirname(final_path) == os.path.join(export_dir, "final")
    assert os.path.exists(os.path.join(final_path, "saved_model.pb"))
    # Evaluations share the training engine: traced for the first only, no checkpoint read.
    assert eval_hook.eval_traces[0] == eval_hook.eval_traces[-1] == model.traces["eval"]
    assert restores == []


def test_throttle_secs_skips_evaluations_but_not_the_final_one(tmp_path, one_device):
    eval_hook = EvalStepHook()
    latest = LatestExporter("latest", serving_input_receiver_fn, exports_to_keep=1)
    eval_result, export_results = tec.train_and_evaluate(
        make_estimator(tmp_path, one_device), tec.TrainSpec(train_input_fn, max_steps=12),
        tec.EvalSpec(eval_input_fn, steps=2, hooks=[eval_hook], exporters=latest,
                     throttle_secs=600))
    assert eval_hook.steps == [4, 12]  # the first new checkpoint, then the final one
    assert eval_result["global_step"] == 12
    (path,) = export_results
    assert tf.io.gfile.listdir(os.path.join(str(tmp_path), "export", "latest")) == [
        os.path.basename(path.decode())]  # exports_to_keep=1: the older export was removed

    # max_steps already reached: nothing is trained, nothing evaluated.
    assert tec.train_and_evaluate(
        make_estimator(tmp_path, one_device), tec.TrainSpec(train_input_fn, max_steps=12),
        tec.EvalSpec(eval_input_fn, hooks=[eval_hook])) == (None, None)
    assert eval_hook.steps == [4, 12]


def test_specs_validate_their_arguments(tmp_path):
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tec.TrainSpec(None)
    with pytest.raises(ValueError, match="Must specify max_steps > 0, given: 0"):
        tec.TrainSpec(train_input_fn, max_steps=0)
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
        tec.TrainSpec(train_input_fn, hooks=[object()])
    with pytest.raises(TypeError, match="saving_listeners must be a list of"):
        tec.TrainSpec(train_input_fn, saving_listeners=[object()])
    with pytest.raises(ValueError, match="Must specify steps > 0, given: -1"):
        tec.EvalSpec(eval_input_fn, steps=-1)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0, given: -1"):
        tec.EvalSpec(eval_input_fn, throttle_secs=-1)
    with pytest.raises(ValueError, match="Must specify start_delay_secs >= 0"):
        tec.EvalSpec(eval_input_fn, start_delay_secs=-1)
    with pytest.raises(ValueError, match="`exporters` must have unique names"):
        tec.EvalSpec(eval_input_fn, exporters=[RecordingExporter(), RecordingExporter()])
    with pytest.raises(TypeError, match="`exporters` must be an Exporter"):
        tec.EvalSpec(eval_input_fn, exporters=[object()])
    spec = tec.EvalSpec(eval_input_fn)
    assert (spec.steps, spec.name, spec.hooks, spec.exporters, spec.start_delay_secs,
            spec.throttle_secs) == (100, None, (), (), 120, 600)
    estimator = tec.Estimator(Model(), model_dir=str(tmp_path))
    with pytest.raises(TypeError, match="`train_spec` must have type"):
        tec.train_and_evaluate(estimator, spec, spec)
    with pytest.raises(TypeError, match="`estimator` must have type"):
        tec.train_and_evaluate(object(), tec.TrainSpec(train_input_fn), spec)


def test_alternating_train_and_evaluate_neither_retraces_nor_restores(
        tmp_path, one_device, restores):
    model = Model()
    estimator = make_estimator(tmp_path, one_device, model)
    traces = []
    for max_steps in (4, 8, 12):
        estimator.train(train_input_fn, max_steps=max_steps)
        assert estimator.evaluate(eval_input_fn)["global_step"] == max_steps
        traces.append(dict(model.traces))
    # The first call of each mode traces model_fn (a few times: tf.function traces again a
    # function that created variables, the device loop traces the step inline); later
    # calls add no trace.
    assert traces[0] == traces[1] == traces[2]
    assert sorted(traces[0]) == [tec.ModeKeys.EVAL, tec.ModeKeys.TRAIN]
    assert restores == []  # every checkpoint was written from memory, never read back

    older = os.path.join(str(tmp_path), "model.ckpt-4")
    assert estimator.evaluate(eval_input_fn, checkpoint_path=older)["global_step"] == 4
    assert restores == ["model.ckpt-4"]
    estimator.train(train_input_fn, max_steps=14)  # memory holds step 4: restore the latest
    assert restores == ["model.ckpt-4", "model.ckpt-12"]
    assert dict(model.traces) == traces[0]
