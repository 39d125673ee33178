"""Tests for contrib_summary (tf.contrib.summary on TF2), summaries and progress_log (the
estimator's own)."""
import types

import numpy as np
import pytest
import tensorflow as tf

from event_reader import read_scalars, read_values
from tpu_estimator_compat.config.tpu_config import TPUConfig
from tpu_estimator_compat.rebuilt_apis import contrib_summary as summary
from tpu_estimator_compat.host import host_calls
from tpu_estimator_compat.host import progress_log
from tpu_estimator_compat.host import summaries

REPLICAS = 8


def _replicated(value, dtype):
    """A per-replica [1] tensor after the host's concatenation: shape [REPLICAS]."""
    return np.full([REPLICAS], value, dtype)


def _run_host_call(host_call_fn, steps, pass_global_step=False):
    example = [np.zeros([1], np.int64), np.zeros([1], np.float32), np.zeros([1], np.float32)]
    with host_calls.HostCallRunner(host_call_fn, example) as runner:
        for step in range(steps):
            tensors = [_replicated(step, np.int64), _replicated(0.5 * step, np.float32),
                       _replicated(0.1 / (step + 1), np.float32)]
            runner(tensors, global_step=step if pass_global_step else None)
        runner.flush()


# ------------------------------------------------------------------------------------------
# contrib_summary inside a HostCallRunner (graph mode).

def test_host_call_recording_every_5_global_steps_over_42_steps(tmp_path):
    logdir = str(tmp_path)

    def host_call_fn(gs, loss, lr):
        gs = gs[0]
        with summary.create_file_writer(logdir, max_queue=21).as_default():
            with summary.record_summaries_every_n_global_steps(5, gs):
                summary.scalar("loss", loss[0], step=gs)
                summary.scalar("learning_rate", lr[0], step=gs)
                return summary.all_summary_ops()

    _run_host_call(host_call_fn, 42)
    scalars = read_scalars(logdir)
    steps = list(range(0, 42, 5))
    assert set(scalars) == {"loss", "learning_rate"}
    assert [s for s, _ in scalars["loss"]] == steps
    np.testing.assert_allclose([v for _, v in scalars["loss"]], [0.5 * s for s in steps])
    np.testing.assert_allclose([v for _, v in scalars["learning_rate"]],
                               [0.1 / (s + 1) for s in steps], rtol=1e-6)
    # TF1 contrib format: simple_value scalars.
    assert {v.WhichOneof("value") for _, v in read_values(logdir)} == {"simple_value"}


def test_default_global_step_and_step_none(tmp_path):
    """`step=None` and the default of `record_summaries_every_n_global_steps` use the global
    step, which the runner feeds from each call's `global_step`."""
    logdir = str(tmp_path)

    def host_call_fn(gs, loss, lr):
        with summary.create_file_writer(logdir).as_default():
            with summary.record_summaries_every_n_global_steps(4):
                summary.scalar("loss", loss[0])

    _run_host_call(host_call_fn, 10, pass_global_step=True)
    assert read_scalars(logdir) == {"loss": [(0, 0.0), (4, 2.0), (8, 4.0)]}


def test_always_never_and_default_recording(tmp_path):
    logdir = str(tmp_path)

    def host_call_fn(gs, loss, lr):
        with summary.create_file_writer(logdir).as_default():
            summary.scalar("default_off", loss[0], step=gs[0])  # TF1: not recorded.
            with summary.never_record_summaries():
                summary.scalar("never", loss[0], step=gs[0])
            with summary.always_record_summaries():
                summary.scalar("always", loss[0], step=gs[0])
                summary.scalar("always", lr[0], step=gs[0])  # Uniquified, as in TF1.
                with tf.name_scope("outer"):
                    summary.scalar("x", loss[0], family="fam", step=gs[0])

    _run_host_call(host_call_fn, 3)
    scalars = read_scalars(logdir)
    assert sorted(scalars) == ["always", "always_1", "fam/outer/fam/x"]
    assert scalars["always"] == [(0, 0.0), (1, 0.5), (2, 1.0)]


def test_tf2_summary_api_in_host_call(tmp_path):
    logdir = str(tmp_path)

    def host_call_fn(gs, loss, lr):
        gs = gs[0]
        with tf.summary.create_file_writer(logdir).as_default():
            with tf.summary.record_if(tf.equal(gs % 5, 0)):
                tf.summary.write("loss", loss[0], step=gs)
                return tf.compat.v1.summary.all_v2_summary_ops()

    _run_host_call(host_call_fn, 12)
    assert read_scalars(logdir) == {"loss": [(0, 0.0), (5, 2.5), (10, 5.0)]}


def test_tf2_scalar_in_host_call(tmp_path):
    pytest.importorskip("tensorboard")  # tf.summary.scalar is implemented by TensorBoard.
    logdir = str(tmp_path)

    def host_call_fn(gs, loss, lr):
        with tf.summary.create_file_writer(logdir).as_default():
            with tf.summary.record_if(tf.equal(gs[0] % 2, 0)):
                tf.summary.scalar("loss", loss[0], step=gs[0])

    _run_host_call(host_call_fn, 5)
    assert read_scalars(logdir) == {"loss": [(0, 0.0), (2, 1.0), (4, 2.0)]}


# ------------------------------------------------------------------------------------------
# contrib_summary eagerly and in a user's own graph.

def test_eager_histogram_image_audio_generic(tmp_path):
    logdir = str(tmp_path)
    values = np.random.RandomState(0).randn(100).astype(np.float32)
    images = np.random.RandomState(1).randint(0, 256, [4, 5, 6, 3]).astype(np.uint8)
    writer = summary.create_file_writer(logdir)
    with writer.as_default(), summary.always_record_summaries():
        summary.histogram("h", values, step=3)
        summary.image("im", images, max_images=2, step=3)
        summary.audio("au", np.zeros([2, 160], np.float32), sample_rate=16000.0,
                      max_outputs=1, step=3)
        summary.generic("g", tf.constant([1, 2, 3]), step=3)
    summary.flush(writer)
    by_tag = {value.tag: (step, value) for step, value in read_values(logdir)}
    assert sorted(by_tag) == ["au/audio", "g", "h", "im/image/0", "im/image/1"]
    assert {step for step, _ in by_tag.values()} == {3}
    histo = by_tag["h"][1].histo
    assert histo.num == 100
    np.testing.assert_allclose([histo.min, histo.max, histo.sum],
                               [values.min(), values.max(), values.sum()], rtol=1e-5)
    image = by_tag["im/image/1"][1].image
    assert (image.height, image.width) == (5, 6)
    np.testing.assert_array_equal(tf.io.decode_png(image.encoded_image_string), images[1])
    np.testing.assert_array_equal(tf.make_ndarray(by_tag["g"][1].tensor), [1, 2, 3])


def test_image_bad_color_in_graph(tmp_path):
    logdir = str(tmp_path)
    image = np.array([[[[np.nan], [0.0]], [[0.5], [1.0]]]], np.float32)

    def host_call_fn(gs, loss, lr):
        with summary.create_file_writer(logdir).as_default():
            with summary.always_record_summaries():
                summary.image("im", tf.constant(image), bad_color=[7, 7, 7, 255], step=gs[0])

    _run_host_call(host_call_fn, 1)
    (step, value), = read_values(logdir)
    pixels = tf.io.decode_png(value.image.encoded_image_string).numpy()[..., 0]
    np.testing.assert_array_equal(pixels, [[7, 0], [127, 255]])


def test_nothing_written_without_writer_or_step(tmp_path):
    with summary.always_record_summaries():
        assert summary.scalar("x", 1.0, step=0) is None  # No default writer: a no-op.
        with summary.create_file_writer(str(tmp_path)).as_default():
            with pytest.raises(ValueError, match="pass `step=` explicitly"):
                summary.scalar("x", 1.0)
    with pytest.raises(ValueError, match="there is none"):
        summary.record_summaries_every_n_global_steps(10)
    assert summary.create_file_writer(None) is not None  # A no-op writer, as in TF1.


def test_initialize_and_initializer_op_in_a_user_graph(tmp_path):
    logdir = str(tmp_path)
    with pytest.raises(RuntimeError, match="only supported in graph mode"):
        summary.summary_writer_initializer_op()
    graph = tf.Graph()
    with graph.as_default():
        global_step = tf.compat.v1.train.create_global_step()
        writer = summary.create_file_writer(logdir)
        with writer.as_default(), summary.always_record_summaries():
            scalar_op = summary.scalar("x", tf.constant(2.5))
            assert len(summary.summary_writer_initializer_op()) == 1
            flush_op = summary.flush()
            with tf.compat.v1.Session() as session:
                summary.initialize(session=session)
                session.run(tf.compat.v1.global_variables_initializer())
                session.run(global_step.assign(6))
                session.run(scalar_op)
                session.run(flush_op)
    assert read_scalars(logdir) == {"x": [(6, 2.5)]}


# ------------------------------------------------------------------------------------------
# summaries: what the estimator writes.

def test_scalar_summary_writer_writes_tf1_style_values(tmp_path):
    logdir = str(tmp_path)
    nested = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag="a", simple_value=4.0)])
    with summaries.ScalarSummaryWriter(logdir) as writer:
        writer.write(10, {"loss": np.float32(0.25), "global_step/sec": 3.5})
        writer.write_eval_results(
            20, {"accuracy": np.float32(0.75), "count": np.int64(7), "global_step": 20,
                 "skipped": None, "matrix": np.eye(2), "images": nested.SerializeToString()},
            checkpoint_path="/m/model.ckpt-20")
    scalars = read_scalars(logdir)
    assert scalars == {"loss": [(10, 0.25)], "global_step/sec": [(10, 3.5)],
                       "accuracy": [(20, 0.75)], "count": [(20, 7.0)], "images/0": [(20, 4.0)]}
    by_tag = {value.tag: value for _, value in read_values(logdir)}
    assert by_tag["loss"].WhichOneof("value") == "simple_value"
    np.testing.assert_array_equal(tf.make_ndarray(by_tag["matrix"].tensor), np.eye(2))
    assert tf.make_ndarray(by_tag["checkpoint_path"].tensor) == b"/m/model.ckpt-20"


def test_scalar_summary_writer_leaves_the_users_summary_state_alone(tmp_path):
    ours, users = str(tmp_path / "ours"), str(tmp_path / "users")
    user_writer = tf.summary.create_file_writer(users)
    with user_writer.as_default(step=5), tf.summary.record_if(False):
        writer = summaries.ScalarSummaryWriter(ours)
        writer.write(1, {"loss": 1.0})  # Written despite the user's record_if(False).
        assert not tf.summary.should_record_summaries()
        assert tf.summary.experimental.get_step() == 5
        with tf.summary.record_if(True):
            tf.summary.write("user_value", 2.0)
        writer.close()
    user_writer.flush()
    assert read_scalars(ours) == {"loss": [(1, 1.0)]}
    assert read_scalars(users) == {"user_value": [(5, 2.0)]}


def test_step_rate_tracker_marks_and_rates_with_injected_times():
    tracker = progress_log.StepRateTracker(every=100, examples_per_step=128)
    assert tracker.due(50)  # The first loop end is always due.
    assert tracker.mark(50, now=1000.0) is None  # Baseline.
    assert not tracker.due(149) and tracker.due(150)
    rate = tracker.mark(250, now=1004.0)
    assert rate == (4.0, 50.0, 6400.0)
    assert rate.as_summaries() == {"global_step/sec": 50.0, "examples/sec": 6400.0}
    assert not tracker.due(349)
    assert tracker.mark(350, now=1009.0) == (5.0, 20.0, 2560.0)  # From the previous mark.


class _RecordingWriter:
    def __init__(self):
        self.written = []

    def write(self, step, values):
        self.written.append((step, values))


def test_progress_log_lines_and_summaries_with_injected_times(monkeypatch, caplog):
    caplog.set_level("INFO", logger="tensorflow")
    config = types.SimpleNamespace(log_step_count_steps=4, save_summary_steps=2)
    writer = _RecordingWriter()
    # iterations_per_loop=2: loss lines every ceil(4 / 2) = 2 loops, rates every 2 steps
    progress = progress_log.ProgressLog(config, examples_per_step=32, summary_writer=writer,
                                        rates_every=2, lines_every_loops=2)
    for step, now, loss in [(2, 100.0, 1.5), (4, 102.0, 1.25), (6, 102.5, 1.0)]:
        monkeypatch.setattr(progress_log.time, "time", lambda now=now: now)
        progress.loop_done(step, loss)
    assert [m for m in caplog.messages if "sec" in m or "loss" in m] == [
        "loss = 1.5, step = 2", "global_step/sec: 1", "examples/sec: 32",
        "loss = 1.0, step = 6 (2.500 sec)", "global_step/sec: 4", "examples/sec: 128"]
    assert writer.written == [
        (2, {"loss": 1.5}),
        (4, {"global_step/sec": 1.0, "examples/sec": 32.0}), (4, {"loss": 1.25}),
        (6, {"global_step/sec": 4.0, "examples/sec": 128.0}), (6, {"loss": 1.0})]


def test_step_by_step_log_ends_loops_where_the_originals_hooks_fired(monkeypatch, caplog):
    """use_tpu=False: the Estimator's schedule (loss line and summary at the first step, then
    every 100; global_step/sec with the lines) and TPUEstimator's rates every
    ceil(100 / iterations_per_loop) steps, both tags."""
    caplog.set_level("INFO", logger="tensorflow")
    config = types.SimpleNamespace(log_step_count_steps=100, save_summary_steps=100,
                                   tpu_config=TPUConfig(iterations_per_loop=50))
    writer = _RecordingWriter()
    estimator = progress_log.progress_log(config, 4, writer, tpu_semantics=False,
                                          tpu_estimator=False)
    assert estimator.next_stop(0) == 1  # the first step alone
    for step, now in [(1, 100.0), (101, 102.0)]:
        monkeypatch.setattr(progress_log.time, "time", lambda now=now: now)
        estimator.loop_done(step, 0.5)
        assert estimator.next_stop(step) == step + 100
    assert [m for m in caplog.messages if "sec" in m or "loss" in m] == [
        "loss = 0.5, step = 1", "global_step/sec: 50", "loss = 0.5, step = 101 (2.000 sec)"]
    assert writer.written == [(1, {"loss": 0.5}), (101, {"global_step/sec": 50.0}),
                              (101, {"loss": 0.5})]

    writer = _RecordingWriter()
    tpu_estimator = progress_log.progress_log(config, 4, writer, tpu_semantics=False,
                                              tpu_estimator=True)
    for step, now in [(1, 100.0), (2, 100.5), (51, 101.0)]:  # rates every 2 steps
        monkeypatch.setattr(progress_log.time, "time", lambda now=now: now)
        tpu_estimator.loop_done(step, 0.25, loss_tag="loss_1")
    assert writer.written == [(1, {"loss_1": 0.25}),
                              (51, {"global_step/sec": 50.0, "examples/sec": 200.0})]
