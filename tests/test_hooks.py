"""SessionRunHooks: called once per device loop, fetching tensors model_fn built."""
import functools
import logging

import numpy as np
import pytest
import tensorflow as tf

import helpers
import tpu_estimator_compat as tec
from helpers import checkpoint_steps

v1 = tf.compat.v1
NUM_EXAMPLES = 20
FEATURES = np.arange(NUM_EXAMPLES * 2, dtype=np.float32).reshape(NUM_EXAMPLES, 2) / 10.0
TARGETS = FEATURES @ np.array([[1.0], [-1.0]], np.float32)


def train_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def eval_input_fn(params):
    return tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(params["batch_size"])


def predict_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(FEATURES).batch(params["batch_size"])


class RecordingHook(v1.train.SessionRunHook):
    """Records every call; fetches `fetches` and may stop once `stop_when(results)`."""

    def __init__(self, fetches=None, stop_when=None):
        self.fetches = fetches
        self.stop_when = stop_when
        self.calls, self.results = [], []
        self.created_at, self.ended_at = [], []

    def begin(self):
        self.calls.append("begin")
        self.global_step = v1.train.get_global_step()

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")
        assert isinstance(coord, v1.train.Coordinator)
        self.created_at.append(int(session.run(self.global_step)))

    def before_run(self, run_context):
        self.calls.append("before_run")
        return v1.train.SessionRunArgs(self.fetches) if self.fetches is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.results.append(run_values.results)
        if self.stop_when is not None and self.stop_when(run_values.results):
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")
        self.ended_at.append(int(session.run(self.global_step)))


def loop_calls(loops):
    return ["begin", "after_create_session"] + ["before_run", "after_run"] * loops + ["end"]


class Model:
    """A linear model_fn that counts its calls and hands out the hooks it is told to build.

    `seen_step` is the global step read before the step's update: in the last step of a loop
    that ends at global step N it is N - 1.
    """

    def __init__(self, spec_hooks=None):
        self.spec_hooks = spec_hooks or (lambda mode, tensors: [])
        self.calls = 0

    def __call__(self, features, labels, mode, params):
        self.calls += 1
        weights = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
        predictions = tf.matmul(features, weights)
        tensors = {
            "seen_step": tf.identity(v1.train.get_global_step(), name="seen_step"),
            "first_feature": tf.identity(features[0, 0], name="first_feature"),
            "replica": tf.identity(
                tf.distribute.get_replica_context().replica_id_in_sync_group + 1,
                name="replica_plus_one"),
        }
        if mode == tec.ModeKeys.PREDICT:
            return tec.TPUEstimatorSpec(mode, predictions={"y": predictions},
                                        prediction_hooks=self.spec_hooks(mode, tensors))
        tensors["loss"] = loss = v1.losses.mean_squared_error(labels, predictions)
        hooks = self.spec_hooks(mode, tensors)
        if mode == tec.ModeKeys.EVAL:
            return tec.TPUEstimatorSpec(mode, loss=loss, evaluation_hooks=hooks)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.05))
        train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)


make_estimator = functools.partial(helpers.make_estimator, iterations_per_loop=4,
                                   save_checkpoints_steps=1000, predict_batch_size=4)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_hooks_run_once_per_loop_with_the_last_steps_values(tmp_path, one_device):
    spec_hook_made = []

    def spec_hooks(mode, tensors):
        if mode != tec.ModeKeys.TRAIN:
            return []
        spec_hook_made.append(RecordingHook({"loss": tensors["loss"]}))
        return spec_hook_made[-1:]

    model = Model(spec_hooks)
    estimator = make_estimator(tmp_path, one_device, model)
    call_hook = RecordingHook({"seen": "seen_step:0"})  # by name, as TF1 allowed
    estimator.train(train_input_fn, steps=12, hooks=[call_hook])

    # model_fn runs once per trace, so it made several hooks; one of them is driven
    (spec_hook,) = [hook for hook in spec_hook_made if hook.calls]
    for hook in (call_hook, spec_hook):
        assert hook.calls == loop_calls(3)
        assert hook.created_at == [0] and hook.ended_at == [12]
    assert [r["seen"] for r in call_hook.results] == [3, 7, 11]  # last step of each loop
    losses = [float(r["loss"]) for r in spec_hook.results]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]

    # The same hooks again: the trace is reused; begin() and the rest run again.
    traces = model.calls
    estimator.train(train_input_fn, steps=4, hooks=[call_hook])
    assert model.calls == traces
    for hook in (call_hook, spec_hook):
        assert hook.calls == loop_calls(3) + loop_calls(1)
        assert hook.created_at == [0, 12] and hook.ended_at == [12, 16]
    assert call_hook.results[-1]["seen"] == 15

    # New hook objects reuse the trace when it computes what they fetch...
    same_fetches = RecordingHook({"seen": "seen_step:0"})
    estimator.train(train_input_fn, steps=4, hooks=[same_fetches])
    assert model.calls == traces
    assert same_fetches.calls == loop_calls(1) and same_fetches.results == [{"seen": 19}]
    # ...and trace the model again when it does not (begin() then runs in both traces).
    new_fetches = RecordingHook({"first": "first_feature:0"})
    estimator.train(train_input_fn, steps=4, hooks=[new_fetches])
    assert model.calls > traces
    assert new_fetches.calls == ["begin", "after_create_session", "before_run"] + loop_calls(1)
    assert new_fetches.results[0]["first"] in FEATURES[:, 0]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_request_stop_ends_training_at_the_loop_boundary(tmp_path, eight_devices):
    hook = RecordingHook({"seen": "seen_step:0", "replica": "replica_plus_one:0"},
                         stop_when=lambda results: results["seen"] >= 5)
    estimator = make_estimator(tmp_path, eight_devices, Model())
    estimator.train(train_input_fn, steps=100, hooks=[hook])
    assert [r["seen"] for r in hook.results] == [3, 7]
    assert [r["replica"] for r in hook.results] == [1, 1]  # replica 0's values
    assert hook.calls == loop_calls(2)
    assert estimator.get_variable_value("global_step") == 8
    assert checkpoint_steps(tmp_path) == [0, 8]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_logging_tensor_hook_logs_every_n_loops_and_at_end(tmp_path, one_device, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")

    def spec_hooks(mode, tensors):
        return [v1.train.LoggingTensorHook(
            {"loss": tensors["loss"], "step": v1.train.get_global_step()}, every_n_iter=2)]

    estimator = make_estimator(tmp_path, one_device, Model(spec_hooks))
    at_end = v1.train.LoggingTensorHook(["seen_step"], every_n_iter=100, at_end=True)
    estimator.train(train_input_fn, steps=12, hooks=[at_end])
    logged_steps = [r.getMessage().split("step = ")[1].split()[0] for r in caplog.records
                    if r.getMessage().startswith("loss = ")
                    and r.filename != "progress_log.py"]  # not the estimator's progress lines
    assert logged_steps == ["4", "12"]  # loops 1 and 3 of 3, the step after each loop
    seen = [line for line in caplog.messages if line.startswith("seen_step = ")]
    assert seen[0].startswith("seen_step = 3")  # the first loop triggers
    assert seen[-1].startswith("seen_step = 11 (")  # at_end: the values of the last loop


@pytest.mark.slow  # trains or evaluates for several seconds
def test_fetches_keyed_by_tensors_come_back_as_a_tf1_session_returned_them(tmp_path, one_device,
                                                                          caplog):
    """`LoggingTensorHook(tensors=[t])` fetches `{t: t}`, a dict keyed by a tensor, which
    TF1's Session.run mapped key by key (tf.nest would sort the keys, comparing tensors):
    results keep the keys, their order and the nests' types."""
    caplog.set_level(logging.INFO, logger="tensorflow")
    made = []

    def spec_hooks(mode, tensors):
        if mode != tec.ModeKeys.TRAIN:
            return []
        seen, first = tensors["seen_step"], tensors["first_feature"]
        made.append((RecordingHook({seen: seen, "nested": [first, (seen,)]}), seen))
        return [made[-1][0], v1.train.LoggingTensorHook(tensors=[seen], every_n_iter=1)]

    estimator = make_estimator(tmp_path, one_device, Model(spec_hooks))
    estimator.train(train_input_fn, steps=8)
    ((hook, seen),) = [(hook, seen) for hook, seen in made if hook.calls]
    assert len(hook.results) == 2
    for result, step in zip(hook.results, [3, 7]):  # (tensors hash only in TF1 code)
        (key, value), (name, nested) = result.items()
        assert key is seen and value == step
        assert name == "nested" and isinstance(nested, list) and nested[1] == (step,)
        assert nested[0] in FEATURES[:, 0]
    logged = [line for line in caplog.messages if line.startswith('Tensor("seen_step')]
    assert [line.split(" = ")[1].split()[0] for line in logged] == ["3", "7"]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_stop_at_step_hook_stops_at_the_first_loop_boundary_past_its_step(tmp_path, one_device):
    model = Model()
    estimator = make_estimator(tmp_path, one_device, model)
    estimator.train(train_input_fn, steps=100, hooks=[v1.train.StopAtStepHook(last_step=6)])
    assert estimator.get_variable_value("global_step") == 8
    traces = model.calls
    estimator.train(train_input_fn, steps=100, hooks=[v1.train.StopAtStepHook(num_steps=5)])
    assert estimator.get_variable_value("global_step") == 16  # 8 + 5 = 13 -> 16
    assert model.calls == traces  # it fetches only the global step: no new trace


def nan_model(fail_on_nan_loss):
    def spec_hooks(mode, tensors):
        not_a_number = tf.sqrt(-1.0 + 0.0 * tensors["loss"])  # the loss itself is finite
        return [v1.train.NanTensorHook(not_a_number, fail_on_nan_loss=fail_on_nan_loss)]
    return Model(spec_hooks)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_nan_tensor_hook_raises_nan_loss_during_training_error(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, nan_model(fail_on_nan_loss=True))
    with pytest.raises(v1.train.NanLossDuringTrainingError):
        estimator.train(train_input_fn, steps=12)
    assert checkpoint_steps(tmp_path) == [0]  # no final checkpoint after an error


@pytest.mark.slow  # trains or evaluates for several seconds
def test_nan_tensor_hook_without_failing_stops_after_the_loop(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, nan_model(fail_on_nan_loss=False))
    estimator.train(train_input_fn, steps=12)
    assert checkpoint_steps(tmp_path) == [0, 4]


class RecordingListener(v1.train.CheckpointSaverListener):
    def __init__(self):
        self.calls = []

    def begin(self):
        self.calls.append("begin")

    def before_save(self, session, global_step_value):
        self.calls.append(("before_save", global_step_value))

    def after_save(self, session, global_step_value):
        self.calls.append(("after_save", global_step_value))

    def end(self, session, global_step_value):
        self.calls.append(("end", global_step_value))


def test_checkpoint_saver_hook_replaces_the_estimators_saver(tmp_path, one_device, caplog):
    caplog.set_level(logging.INFO, logger="tensorflow")
    hook_listener, call_listener = RecordingListener(), RecordingListener()
    saver_hook = v1.train.CheckpointSaverHook(str(tmp_path), save_steps=8,
                                              listeners=[hook_listener])
    estimator = make_estimator(tmp_path, one_device, Model(), save_checkpoints_steps=1,
                               keep_checkpoint_max=0)
    estimator.train(train_input_fn, steps=20, hooks=[saver_hook],
                    saving_listeners=[call_listener])
    assert "Bypassing TPUEstimator hook" in caplog.messages
    assert checkpoint_steps(tmp_path) == [0, 8, 16, 20]  # not every loop (config: 1 step)
    expected = ["begin"] + [(event, step) for step in (0, 8, 16, 20)
                            for event in ("before_save", "after_save")] + [("end", 20)]
    assert hook_listener.calls == expected
    assert call_listener.calls == expected  # saving_listeners join the first saver hook


def test_saving_listeners_need_a_checkpoint_saver(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, Model(), save_checkpoints_steps=None,
                               save_checkpoints_secs=None)
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook"):
        estimator.train(train_input_fn, steps=4, saving_listeners=[RecordingListener()])


@pytest.mark.slow  # trains or evaluates for several seconds
def test_evaluation_hooks_run_once_over_all_eval_steps(tmp_path, one_device):
    spec_hook_made = []

    def spec_hooks(mode, tensors):
        if mode != tec.ModeKeys.EVAL:
            return []
        spec_hook_made.append(RecordingHook({"first": tensors["first_feature"]}))
        return spec_hook_made[-1:]

    estimator = make_estimator(tmp_path, one_device, Model(spec_hooks))
    estimator.train(train_input_fn, steps=4)
    call_hook = RecordingHook({"first": "first_feature:0"})
    results = estimator.evaluate(eval_input_fn, hooks=[call_hook])  # 3 batches: 8, 8, 4
    assert results["global_step"] == 4
    (spec_hook,) = [hook for hook in spec_hook_made if hook.calls]
    for hook in (call_hook, spec_hook):
        assert hook.calls == loop_calls(1)
        assert hook.created_at == [4] and hook.ended_at == [4]
        # the last step with examples (the padded batch of 4 that starts at example 16)
        assert [r["first"] for r in hook.results] == [FEATURES[16, 0]]


@pytest.mark.slow  # trains or evaluates for several seconds
def test_prediction_hooks_run_once_per_loop_and_can_stop_predict(tmp_path, one_device):
    estimator = make_estimator(tmp_path, one_device, Model(), iterations_per_loop=2)
    hook = RecordingHook({"first": "first_feature:0"})
    predictions = list(estimator.predict(predict_input_fn, hooks=[hook]))  # batches 4,4,4,4,4
    assert len(predictions) == NUM_EXAMPLES
    # loops of 2 batches: [0, 4], [8, 12], [16, end of input]
    assert [r["first"] for r in hook.results] == [FEATURES[i, 0] for i in (4, 12, 16)]
    assert hook.calls == loop_calls(3)

    # A loop that sees only the end of the input gets before_run but no after_run, as TF1's
    # run that hit OutOfRange: 4 batches in loops of 2 leave the end to a third loop.
    hook = RecordingHook({"first": "first_feature:0"})
    predictions = list(estimator.predict(
        lambda params: predict_input_fn(params).take(4), hooks=[hook]))
    assert len(predictions) == 16
    assert hook.calls == loop_calls(2)[:-1] + ["before_run", "end"]

    stopper = RecordingHook({"first": "first_feature:0"}, stop_when=lambda results: True)
    assert len(list(estimator.predict(predict_input_fn, hooks=[stopper]))) == 8
    assert stopper.calls == loop_calls(1)


def test_a_hook_fetching_an_untraced_tensor_fails_clearly(tmp_path, one_device):
    class LateFetch(RecordingHook):
        def before_run(self, run_context):
            super().before_run(run_context)
            if len(self.results) == 1:
                return v1.train.SessionRunArgs("first_feature:0")
            return None

    estimator = make_estimator(tmp_path, one_device, Model())
    with pytest.raises(ValueError, match="first before_run"):
        estimator.train(train_input_fn, steps=12, hooks=[LateFetch()])


def test_a_session_run_feeding_what_the_device_loop_computes_fails_clearly(tmp_path,
                                                                          one_device):
    """session.run runs on the host what needs no step input; a step output (the last
    loop's value) or the step's input cannot be fed: the device loop computes them."""
    errors = []

    class FeedingHook(RecordingHook):
        def begin(self):
            super().begin()
            self.scale = v1.placeholder_with_default(1.0, [])
            self.first_feature = v1.get_default_graph().get_tensor_by_name("first_feature:0")

        def after_run(self, run_context, run_values):
            super().after_run(run_context, run_values)
            session = run_context.session
            for fetches, feed_dict in [
                    (self.first_feature, {self.scale: 2.0}),
                    (self.scale, {_placeholder_under(self.first_feature): [[0.0]]})]:
                with pytest.raises(NotImplementedError) as error:
                    session.run(fetches, feed_dict=feed_dict)
                errors.append(str(error.value))
            self.doubled = session.run(self.scale * 2.0, feed_dict={self.scale: 3.0})

    hook = FeedingHook(fetches={"first_feature": "first_feature:0"})
    estimator = make_estimator(tmp_path, one_device, Model())
    estimator.train(train_input_fn, steps=4, hooks=[hook])
    assert errors == [
        "tpu_estimator_compat cannot feed values into the traced device loop (a "
        "SessionRunArgs or session.run feed_dict). Produce the values in input_fn or "
        "model_fn instead."] * 2
    assert hook.doubled == 6.0


def _placeholder_under(tensor):
    """The placeholder `tensor` is computed from, through each op's first input."""
    while tensor.op.type != "Placeholder":
        tensor = tensor.op.inputs[0]
    return tensor
