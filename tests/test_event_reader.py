"""The tests' event reader orders event files as they were written, whatever their names."""
import tensorflow as tf

from tests import event_reader


def test_files_written_in_one_second_read_in_writing_order(tmp_path):
    # A process's writer counter crosses a digit: by name `.10.` sorts before `.2.`.
    for step in range(12):
        writer = tf.summary.create_file_writer(str(tmp_path))
        with writer.as_default():
            tf.summary.scalar("value", float(step), step=step)
        writer.close()
    assert [step for step, _ in event_reader.read_scalars(str(tmp_path))["value"]] == list(
        range(12))
