"""Log lines as a TF1 program sees them: `tf.logging.set_verbosity` shows or silences the
estimator's INFO lines, with or without `tf.app.run`, and every line is printed once.

Each case runs a small legacy program in a fresh process (`tf.app.run` installs absl's
handler for the rest of a process, and pytest's own handlers would hide the duplicates).
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest

_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tpu_estimator_compat.v1 as tf

    def model_fn(features, labels, mode, params):
        predictions = tf.layers.dense(features, 1)
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        x = np.ones([16, 2], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def main(_):
        config = tf.contrib.tpu.RunConfig(
            model_dir=sys.argv[2], tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=2))
        estimator = tf.contrib.tpu.TPUEstimator(model_fn, config=config, use_tpu=False,
                                                train_batch_size=4)
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("user info while WARN")
        estimator.train(input_fn, max_steps=2)
        print("=== INFO ===", file=sys.stderr, flush=True)
        tf.logging.set_verbosity(tf.logging.INFO)
        tf.logging.info("user info while INFO")
        estimator.train(input_fn, max_steps=4)

    if sys.argv[1] == "app":
        tf.app.run(main)
    else:
        main(None)
""")


@pytest.mark.slow  # starts processes
@pytest.mark.parametrize("runner", ["app", "plain"])
def test_verbosity_controls_the_progress_lines_and_each_line_prints_once(tmp_path, runner):
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}
    result = subprocess.run(
        [sys.executable, str(script), runner, str(tmp_path / "model")], capture_output=True,
        text=True, timeout=300, check=False, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    silenced, shown = result.stderr.split("=== INFO ===\n")

    for line in ("Loss for final step", "Saving checkpoints for", "user info while"):
        assert line not in silenced
    assert shown.count("user info while INFO") == 1
    assert shown.count("Saving checkpoints for 4 into") == 1
    assert shown.count("Loss for final step: ") == 1
    loss_line = next(line for line in shown.splitlines() if "Loss for final step" in line)
    if runner == "app":  # absl's format, with the caller's file
        assert loss_line.startswith("I") and "training.py:" in loss_line, loss_line
    else:
        assert loss_line.startswith("INFO:tensorflow:Loss for final step: "), loss_line


_LIFECYCLE_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tpu_estimator_compat.v1 as tf

    def model_fn(features, labels, mode, params):
        if isinstance(features, dict):
            features = features["x"]
        predictions = tf.layers.dense(features, 1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.contrib.tpu.TPUEstimatorSpec(mode, predictions={"y": predictions})
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        def metric_fn(labels, predictions):
            return {"mse": tf.metrics.mean_squared_error(labels, predictions)}
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                               eval_metrics=(metric_fn, [labels, predictions]))

    def input_fn(params):
        x = np.ones([16, 2], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def predict_input_fn(params):
        return tf.data.Dataset.from_tensor_slices(np.ones([8, 2], np.float32)).batch(
            params["batch_size"])

    def serving_input_receiver_fn():
        x = tf.placeholder(tf.float32, [None, 2])
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    def main(_):
        tf.logging.info("a line before any estimator")
        for use_tpu in (False, True):
            model_dir = f"{sys.argv[1]}/{use_tpu}"
            config = tf.contrib.tpu.RunConfig(
                model_dir=model_dir, save_checkpoints_steps=4, log_step_count_steps=1000,
                train_distribute=tf.distribute.OneDeviceStrategy("/cpu:0") if use_tpu else None,
                tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=2))
            estimator = tf.contrib.tpu.TPUEstimator(
                model_fn, config=config, use_tpu=use_tpu, train_batch_size=4,
                eval_batch_size=4, predict_batch_size=4)
            for phase, run in [
                    ("train", lambda: estimator.train(input_fn, max_steps=6)),
                    ("evaluate", lambda: estimator.evaluate(input_fn, steps=3)),
                    ("predict", lambda: list(estimator.predict(predict_input_fn))),
                    ("export", lambda: estimator.export_saved_model(
                        model_dir + "/export", serving_input_receiver_fn))]:
                print(f"=== use_tpu={use_tpu} {phase}", file=sys.stderr, flush=True)
                run()
        print("=== end", file=sys.stderr, flush=True)

    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run(main)
""")

# The original's lines (TF 2.15 TPUEstimator, use_tpu=False, the program above under
# tf.app.run at INFO) that this package prints too, in order; <...> stands for a value.
_ORIGINAL_CPU_LINES = {
    "train": ["Calling model_fn.", "Done calling model_fn.",
              "Saving checkpoints for 0 into <model_dir>/model.ckpt.",
              "Saving checkpoints for 4 into <model_dir>/model.ckpt.",
              "Saving checkpoints for 6 into <model_dir>/model.ckpt.",
              "Loss for final step: <float32>."],
    "evaluate": ["Calling model_fn.", "Done calling model_fn.",
                 "Starting evaluation at <%Y-%m-%dT%H:%M:%S>",
                 "Evaluation [1/3]", "Evaluation [2/3]", "Evaluation [3/3]",
                 "Inference Time : <0.00000>s",
                 "Finished evaluation at <%Y-%m-%d-%H:%M:%S>",
                 "Saving dict for global step 6: global_step = 6, loss = <float32>, "
                 "mse = <float32>",
                 "Saving 'checkpoint_path' summary for global step 6: "
                 "<model_dir>/model.ckpt-6"],
    "predict": ["Calling model_fn.", "Done calling model_fn."],
    "export": ["Calling model_fn.", "Done calling model_fn."],  # CPU MetaGraph only
}
# With TPU semantics the original's infeed/outfeed hook logged before each Session.run (of
# iterations_per_loop steps; evaluation: all its steps), and evaluation counted its steps at
# the end of that run.
_INFEED_2 = ["Enqueue next (2) batch(es) of data to infeed.",
             "Dequeue next (2) batch(es) of data from outfeed."]
_TPU_LINES = {
    "train": (_ORIGINAL_CPU_LINES["train"][:3] + _INFEED_2 + _INFEED_2
              + _ORIGINAL_CPU_LINES["train"][3:4] + _INFEED_2
              + _ORIGINAL_CPU_LINES["train"][4:]),
    "evaluate": (_ORIGINAL_CPU_LINES["evaluate"][:3]
                 + ["Enqueue next (3) batch(es) of data to infeed.",
                    "Dequeue next (3) batch(es) of data from outfeed.", "Evaluation [3/3]"]
                 + _ORIGINAL_CPU_LINES["evaluate"][6:]),
    # 8 examples in batches of 4: a loop of 2 batches, then one that finds the end (the
    # original's last Session.run, which found its stopping signal)
    "predict": ["Calling model_fn.", "Done calling model_fn."] + _INFEED_2 + _INFEED_2,
    "export": ["Calling model_fn.", "Done calling model_fn."],
}
_PLACEHOLDERS = {
    "<model_dir>": r"\S+", "<float32>": r"-?\d\.\d+(e-?\d+)?|-?\d+\.\d*",
    "<%Y-%m-%dT%H:%M:%S>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
    "<%Y-%m-%d-%H:%M:%S>": r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d", "<0.00000>": r"\d+\.\d{5}"}
_KEYS = ("Calling model_fn", "Done calling model_fn", "Saving checkpoints for",
         "Loss for final step", "Starting evaluation at", "Evaluation [", "Inference Time",
         "Finished evaluation at", "Saving dict for", "Saving 'checkpoint_path'",
         "Enqueue next", "Dequeue next")


def _pattern(line):
    pattern = re.escape(line)
    for placeholder, regex in _PLACEHOLDERS.items():
        pattern = pattern.replace(re.escape(placeholder), f"(?:{regex})")
    return pattern


def test_lifecycle_lines_are_the_originals_once_each_under_app_run(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(_LIFECYCLE_PROGRAM)
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "model")], capture_output=True,
        text=True, timeout=600, check=False, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    head, *phases = re.split(r"^=== ", result.stderr, flags=re.M)
    # A tf.logging line before any estimator exists: once, in absl's format.
    assert head.count("a line before any estimator") == 1, head
    assert re.search(r"^I\d{4} [\d:.]+ +\d+ program\.py:\d+\] a line before any estimator$",
                     head, re.M), head
    assert phases[-1] == "end\n"
    for phase in phases[:-1]:
        title, _, text = phase.partition("\n")
        use_tpu, name = re.fullmatch(r"use_tpu=(\w+) (\w+)", title).groups()
        expected = (_TPU_LINES if use_tpu == "True" else _ORIGINAL_CPU_LINES)[name]
        messages = [re.sub(r"^I\d{4} [\d:.]+ +\d+ \S+:\d+\] ", "", line)
                    for line in text.splitlines() if line.startswith("I")]
        assert not any(line.startswith("INFO:tensorflow:") for line in text.splitlines())
        lifecycle = [m for m in messages if m.startswith(_KEYS)]
        assert len(lifecycle) == len(expected), (title, lifecycle)
        for line, wanted in zip(lifecycle, expected):
            assert re.fullmatch(_pattern(wanted), line), (title, line, wanted)
        if name != "export":  # the first run of each device loop says it compiles
            assert f"Compiling the {dict(train='train', evaluate='eval').get(name, 'infer')} " \
                   "loop: its first run includes the compilation." in messages, messages


@pytest.mark.parametrize("steps, loops, each_step, expected", [
    (3, [3], True, ["Evaluation [1/3]", "Evaluation [2/3]", "Evaluation [3/3]"]),
    # from 20 steps on, TF1 logged every steps // 10 steps, and the last
    (25, [25], True, [f"Evaluation [{n}/25]" for n in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                                       22, 24, 25)]),
    (None, [1, 1], True, ["Evaluation [1]", "Evaluation [2]"]),
    # TPU semantics: counted when the run ends, as the original's one Session.run
    (40, [40], False, ["Evaluation [40/40]"]),
    (40, [8, 7], False, ["Evaluation [8/40]"]),  # input ended at 15: not a multiple of 4
])
def test_evaluation_progress_lines(steps, loops, each_step, expected):
    from tpu_estimator_compat.host import lifecycle_log  # noqa: PLC0415  (imports TF)
    progress = lifecycle_log.EvaluationProgress(steps)
    with _captured_tensorflow_log() as records:
        progress.start()
        for size in loops:
            progress.steps_done(size, each_step=each_step)
        progress.finish()
    lines = [record.getMessage() for record in records]
    assert re.fullmatch(r"Starting evaluation at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lines[0])
    assert lines[1:-2] == expected
    assert re.fullmatch(r"Inference Time : \d+\.\d{5}s", lines[-2])
    assert re.fullmatch(r"Finished evaluation at \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d", lines[-1])


class _captured_tensorflow_log:  # noqa: N801
    """The records the "tensorflow" logger gets at INFO inside the block."""

    def __enter__(self):
        import logging  # noqa: PLC0415
        self.records = []
        self.logger = logging.getLogger("tensorflow")
        self.level = self.logger.level
        self.handler = logging.Handler()
        self.handler.emit = self.records.append
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        return self.records

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


# ------------------------------------------------------------------------------------------
# `Using config: {...}` at construction: the original's text (TF 2.15, the configs below,
# no TF_CONFIG), copied from its log.

_ORIGINAL_ESTIMATOR_CONFIG = (
    "{'_model_dir': '<model_dir>', '_tf_random_seed': None, '_save_summary_steps': 100, "
    "'_save_checkpoints_steps': None, '_save_checkpoints_secs': 600, "
    "'_session_config': allow_soft_placement: true\ngraph_options {\n  rewrite_options {\n"
    "    meta_optimizer_iterations: ONE\n  }\n}\n, "
    "'_keep_checkpoint_max': 5, '_keep_checkpoint_every_n_hours': 10000, "
    "'_log_step_count_steps': 100, '_train_distribute': None, '_device_fn': None, "
    "'_protocol': None, '_eval_distribute': None, '_experimental_distribute': None, "
    "'_experimental_max_worker_delay_secs': None, "
    "'_session_creation_timeout_secs': 7200, '_checkpoint_save_graph_def': True, "
    "'_service': None, '_cluster_spec': ClusterSpec({}), '_task_type': 'worker', "
    "'_task_id': 0, '_global_id_in_cluster': 0, '_master': '', '_evaluation_master': '', "
    "'_is_chief': True, '_num_ps_replicas': 0, '_num_worker_replicas': 1}")
_ORIGINAL_TPU_ESTIMATOR_CONFIG = (
    "{'_model_dir': '<model_dir>', '_tf_random_seed': None, '_save_summary_steps': 100, "
    "'_save_checkpoints_steps': None, '_save_checkpoints_secs': 600, "
    "'_session_config': allow_soft_placement: true\ngraph_options {\n  rewrite_options {\n"
    "    meta_optimizer_iterations: ONE\n  }\n}\n, "
    "'_keep_checkpoint_max': 5, '_keep_checkpoint_every_n_hours': 10000, "
    "'_log_step_count_steps': None, '_train_distribute': None, '_device_fn': None, "
    "'_protocol': None, '_eval_distribute': None, '_experimental_distribute': None, "
    "'_experimental_max_worker_delay_secs': None, "
    "'_session_creation_timeout_secs': 7200, '_checkpoint_save_graph_def': True, "
    "'_service': None, '_cluster_spec': ClusterSpec({}), '_task_type': 'worker', "
    "'_task_id': 0, '_global_id_in_cluster': 0, '_master': '', '_evaluation_master': '', "
    "'_is_chief': True, '_num_ps_replicas': 0, '_num_worker_replicas': 1, "
    "'_tpu_config': TPUConfig(iterations_per_loop=50, num_shards=None, "
    'num_cores_per_replica=None, per_host_input_for_training=2, tpu_job_name=None, '
    'initial_infeed_sleep_secs=None, input_partition_dims=None, '
    'eval_training_input_configuration=2, experimental_host_call_every_n_steps=1, '
    'experimental_allow_per_host_v2_parallel_get_next=False, '
    "experimental_feed_hook=None), '_cluster': None}")


def test_using_config_is_logged_at_construction_as_the_original_wrote_it(tmp_path,
                                                                        monkeypatch):
    import tpu_estimator_compat as tec  # noqa: PLC0415  (imports TF)
    monkeypatch.delenv("TF_CONFIG", raising=False)

    def model_fn(features, labels, mode, params):
        raise AssertionError("not called")

    model_dir = str(tmp_path)
    estimator_classes = tec.Estimator, tec.TPUEstimator  # imported (lazily) before the block
    with _captured_tensorflow_log() as records:
        estimator_classes[0](model_fn, config=tec.RunConfig(model_dir=model_dir))
        estimator_classes[1](model_fn, use_tpu=False, train_batch_size=4, config=tec.RunConfig(
            model_dir=model_dir, tpu_config=tec.TPUConfig(iterations_per_loop=50)))
    lines = [record.getMessage() for record in records]
    assert lines == [
        "Using config: " + _ORIGINAL_ESTIMATOR_CONFIG.replace("<model_dir>", model_dir),
        "Using config: " + _ORIGINAL_TPU_ESTIMATOR_CONFIG.replace("<model_dir>", model_dir),
        "eval_on_tpu ignored because use_tpu is False."]


# ------------------------------------------------------------------------------------------
# Long phases: a heartbeat line with the time so far, from a thread stopped with the phase.
# The interval is injected (log.HEARTBEAT_SECONDS); a slow phase lasts until its first
# heartbeat arrives, so no test depends on timing.

class _heard:  # noqa: N801
    """Captures the "tensorflow" logger's records; `.event` is set by the first whose
    message starts with `prefix`."""

    def __init__(self, prefix):
        import threading  # noqa: PLC0415
        self.event = threading.Event()
        self.prefix = prefix

    def __enter__(self):
        self._capture = _captured_tensorflow_log()
        self.records = self._capture.__enter__()
        emit = self._capture.handler.emit

        def emit_and_signal(record):
            emit(record)
            if record.getMessage().startswith(self.prefix):
                self.event.set()
        self._capture.handler.emit = emit_and_signal
        return self

    def __exit__(self, *exc):
        return self._capture.__exit__(*exc)

    def messages(self):
        return [record.getMessage() for record in self.records]


def _heartbeat_threads():
    import threading  # noqa: PLC0415
    return [t for t in threading.enumerate() if t.name == "tpu_estimator_compat-heartbeat"]


def test_a_phase_slower_than_the_interval_says_what_it_does_and_for_how_long(monkeypatch):
    from tpu_estimator_compat import log  # noqa: PLC0415  (imports TF)
    monkeypatch.setattr(log, "HEARTBEAT_SECONDS", 0.01)
    with _heard("Still restoring") as heard:
        with log.phase("restoring parameters from %s", "/ckpt/model.ckpt-5"):
            assert heard.event.wait(60)
    assert heard.messages()
    for message in heard.messages():
        assert re.fullmatch(r"Still restoring parameters from /ckpt/model\.ckpt-5: \d+ s so "
                            r"far\.", message), message
    assert not _heartbeat_threads()


def test_a_phase_faster_than_the_interval_logs_nothing_and_errors_stop_the_heartbeat(
        monkeypatch):
    from tpu_estimator_compat import log  # noqa: PLC0415  (imports TF)
    monkeypatch.setattr(log, "HEARTBEAT_SECONDS", 3600.0)
    with _heard("Still") as heard:
        with log.phase("calling model_fn for the %s step", "train"):
            pass
    assert heard.messages() == [] and not _heartbeat_threads()

    monkeypatch.setattr(log, "HEARTBEAT_SECONDS", 0.01)
    with _heard("Still building") as heard, pytest.raises(ValueError, match="model_fn failed"):
        with log.phase("building the train step"):
            assert heard.event.wait(60)
            raise ValueError("model_fn failed")
    assert not _heartbeat_threads()  # stopped by the error, nothing more to come


def test_an_inner_phase_speaks_for_both_while_it_lasts(monkeypatch):
    from tpu_estimator_compat import log  # noqa: PLC0415  (imports TF)
    monkeypatch.setattr(log, "HEARTBEAT_SECONDS", 0.01)
    with _heard("Still compiling") as heard:
        with log.phase("running evaluation steps 1 to 3"):
            with log.phase("compiling and running the first eval loop"):
                assert heard.event.wait(60)
                heard.event.clear()
                assert heard.event.wait(60)  # a second line of the inner phase
                inner = heard.messages()
    first_inner = next(i for i, m in enumerate(inner) if m.startswith("Still compiling"))
    assert all(m.startswith("Still compiling") for m in inner[first_inner + 1:]), inner
    assert not _heartbeat_threads()


@pytest.mark.slow  # trains in process for a few seconds
def test_tracing_model_fn_has_a_heartbeat(tmp_path, monkeypatch):
    import numpy as np  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415  (imports TF)
    import tensorflow as tf  # noqa: PLC0415
    from tpu_estimator_compat import log  # noqa: PLC0415
    monkeypatch.setattr(log, "HEARTBEAT_SECONDS", 0.01)
    estimator_class = tec.TPUEstimator
    with _heard("Still calling model_fn for the train step: ") as heard:
        def model_fn(features, labels, mode, params):
            assert heard.event.wait(60), "no heartbeat while model_fn ran"
            weights = tf.compat.v1.get_variable("w", [2, 1])
            predictions = tf.matmul(features, weights)
            loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
            train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
                loss, tf.compat.v1.train.get_global_step())
            return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

        def input_fn(params):
            x = np.ones([8, 2], np.float32)
            return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(
                params["batch_size"], drop_remainder=True)

        estimator_class(model_fn, use_tpu=False, train_batch_size=4, config=tec.RunConfig(
            model_dir=str(tmp_path))).train(input_fn, max_steps=1)
    messages = heard.messages()
    first_beat = next(i for i, m in enumerate(messages)
                      if m.startswith("Still calling model_fn"))
    assert messages.index("Calling model_fn.") < first_beat < messages.index(
        "Done calling model_fn.")
    assert not _heartbeat_threads()


# ------------------------------------------------------------------------------------------
# Evaluation [k/N] as evaluation goes: with CPU semantics an eval loop ends at each step that
# gets a line; with TPU semantics one loop, counted at its end, as the original.

class _FakeEvalRun:
    """What the eval loop returns, for `evaluation._run_loops`: `steps` steps with rows."""

    def __init__(self, steps):
        import numpy as np  # noqa: PLC0415
        self.steps = steps
        self.stop = np.zeros(steps, bool)
        self.loss_has_real_rows = np.ones(steps, bool)

    def numpy(self):
        return self

    def concatenate(self, *others):
        return _FakeEvalRun(self.steps + sum(other.steps for other in others))


@pytest.mark.parametrize("steps, tpu_semantics, expected", [
    (3, False, ["run 1", "Evaluation [1/3]", "run 1", "Evaluation [2/3]", "run 1",
                "Evaluation [3/3]"]),
    (25, False, [line for n in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24)
                 for line in ("run 2", f"Evaluation [{n}/25]")]
     + ["run 1", "Evaluation [25/25]"]),
    (25, True, ["Enqueue next (25) batch(es) of data to infeed.",
                "Dequeue next (25) batch(es) of data from outfeed.", "run 25",
                "Evaluation [25/25]"]),
])
def test_evaluation_lines_come_as_evaluation_goes(steps, tpu_semantics, expected):
    import types  # noqa: PLC0415
    from tpu_estimator_compat import log  # noqa: PLC0415  (imports TF)
    from tpu_estimator_compat.host import evaluation, lifecycle_log, loop_actions  # noqa: PLC0415

    def loop(iterator, size):
        log.info("run %d", int(size))
        return _FakeEvalRun(int(size))

    progress = lifecycle_log.EvaluationProgress(steps)
    with _captured_tensorflow_log() as records:
        result = evaluation._run_loops(  # pylint: disable=protected-access
            types.SimpleNamespace(loop=loop), None, steps, None, loop_actions.LoopActions([]),
            0, progress, tpu_semantics)
    assert [record.getMessage() for record in records] == expected
    assert result.steps == steps
