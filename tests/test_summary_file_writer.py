"""`tf.summary.FileWriter` / `FileWriterCache` of the v1 namespace, eagerly as in a graph
(rebuilt_apis/summary_file_writer.py).

A TF1 program writes its evaluation results with a FileWriter in its own top-level code
(retinanet: `writer.add_summary(tf.Summary(value=[...]), step)`), which ran in graph mode
in TF1 and runs eagerly in TensorFlow 2. The expected event files are what TF 2.15's
`tf.compat.v1.summary.FileWriter` wrote in graph mode for the same calls.
"""
import time

import pytest
import tensorflow as tf

import tpu_estimator_compat.v1 as tf1
from tests import event_reader

v1 = tf.compat.v1

# TF 2.15, the same calls in `with tf.Graph().as_default():`, one list of events per file:
# (kind, step, detail); metadata is kept on a tag's first value only.
ORIGINAL_EVENT_FILES = [
    [("file_version", 0, "brain.Event:2"),
     ("summary", 3, [("AP", 0.25, "scalars"), ("ARmax1", 0.5, "")]),
     ("summary", 4, [("AP", 0.375, "")]),
     ("session_log", 5, "START"),
     ("tagged_run_metadata", 5, "step_5")],
    [("file_version", 0, "brain.Event:2"), ("summary", 6, [("AP", 0.5, "")])],  # reopened
]
ORIGINAL_CACHED_WRITER_FILE = [("file_version", 0, "brain.Event:2"), ("graph_def", 0, None),
                               ("meta_graph_def", 0, None),
                               ("summary", 7, [("loss", 1.5, "")])]


def _write_every_kind(logdir):
    scalars = v1.SummaryMetadata(plugin_data=v1.SummaryMetadata.PluginData(
        plugin_name="scalars"))
    with tf1.summary.FileWriter(logdir) as writer:
        assert writer.get_logdir() == logdir
        with tf.Graph().as_default():  # as retinanet's evaluation.write_summary
            writer.add_summary(v1.Summary(value=[
                v1.Summary.Value(tag="AP", simple_value=0.25, metadata=scalars),
                v1.Summary.Value(tag="ARmax1", simple_value=0.5)]), 3)
        writer.add_summary(v1.Summary(value=[v1.Summary.Value(
            tag="AP", simple_value=0.375, metadata=scalars)]).SerializeToString(), 4)
        writer.add_event(v1.Event(step=5, session_log=v1.SessionLog(
            status=v1.SessionLog.START)))
        writer.add_run_metadata(v1.RunMetadata(), "step_5", 5)
        writer.flush()
    time.sleep(1.1)  # an event file's name has whole seconds: reopen's must differ
    writer.reopen()
    writer.add_summary(v1.Summary(value=[v1.Summary.Value(tag="AP", simple_value=0.5)]), 6)
    writer.close()


def _events(path):
    events = []
    for event in v1.train.summary_iterator(path):
        kind = event.WhichOneof("what")
        detail = {
            "summary": lambda e: [(v.tag, v.simple_value, v.metadata.plugin_data.plugin_name)
                                  for v in e.summary.value],
            "file_version": lambda e: e.file_version,
            "session_log": lambda e: v1.SessionLog.SessionStatus.Name(e.session_log.status),
            "tagged_run_metadata": lambda e: e.tagged_run_metadata.tag,
        }.get(kind, lambda e: None)(event)
        events.append((kind, event.step, detail))
    return events


def _event_files(logdir):
    return [_events(path) for path in event_reader.event_files(str(logdir))]


def test_eager_file_writer_writes_the_originals_events(tmp_path):
    assert tf.executing_eagerly()
    _write_every_kind(str(tmp_path))
    assert _event_files(tmp_path) == ORIGINAL_EVENT_FILES


def test_in_a_graph_it_is_tensorflows_file_writer(tmp_path):
    with tf.Graph().as_default():
        _write_every_kind(str(tmp_path))
    assert _event_files(tmp_path) == ORIGINAL_EVENT_FILES


def test_scalars_written_eagerly_are_read_back_by_tag_and_step(tmp_path):
    writer = tf1.summary.FileWriter(str(tmp_path / "train_eval"))
    for step, ap in ((2, 0.125), (4, 0.25)):
        writer.add_summary(tf1.Summary(value=[tf1.Summary.Value(tag="AP", simple_value=ap),
                                              tf1.Summary.Value(tag="AP50", simple_value=2 * ap)]),
                           step)
    writer.close()
    assert event_reader.read_scalars(str(tmp_path / "train_eval")) == {
        "AP": [(2, 0.125), (4, 0.25)], "AP50": [(2, 0.25), (4, 0.5)]}


def test_file_writer_cache_keeps_one_writer_per_directory(tmp_path):
    writer = tf1.summary.FileWriterCache.get(str(tmp_path))
    assert tf1.summary.FileWriterCache.get(str(tmp_path)) is writer
    assert isinstance(writer, tf1.summary.FileWriter)
    writer.add_summary(v1.Summary(value=[v1.Summary.Value(tag="loss", simple_value=1.5)]), 7)
    tf1.summary.FileWriterCache.clear()  # closes (and so flushes) it
    assert _event_files(tmp_path) == [ORIGINAL_CACHED_WRITER_FILE]
    assert tf1.summary.FileWriterCache.get(str(tmp_path / "next")) is not writer
    tf1.summary.FileWriterCache.clear()


def test_session_argument_under_eager_execution_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match=r"session=.*runs eagerly.*Leave out `session`"):
        tf1.summary.FileWriter(str(tmp_path), session=object())


def test_the_rest_of_tf_summary_is_tensorflows():
    assert tf1.summary.scalar is v1.summary.scalar
    assert tf1.summary.merge_all is v1.summary.merge_all
    assert tf1.compat.v1.summary.FileWriter is tf1.summary.FileWriter
    assert issubclass(tf1.summary.FileWriter, v1.summary.FileWriter)
