"""Errors raised while reading input_fn's data, named with the files it reads.

TensorFlow reports a corrupt or truncated TFRecord (`DataLossError: corrupted record at
1920`) or a parse spec naming a feature the records lack (`InvalidArgumentError: Graph
execution error ... Feature: z ... is required but could not be found`) from inside the
device loop, without the file. `named_input_errors` re-raises them as `InputRecordError`
/ `InputPipelineError` (subclasses of those two) naming the file (the files input_fn's
dataset reads, found among the constants of its graph; those long enough to hold the record
offset TensorFlow gives), and what the caller adds: the step reached, the last intact
checkpoint.
"""
import contextlib
import os
import re
import weakref

import tensorflow as tf

from tpu_estimator_compat.tf_internals import data as tf_data

_INPUT_NODES = ("IteratorGetNext", "Iterator::Root", "GetNextFromShard")
_OFFSET = re.compile(r"record at (\d+)")
_IN_DATASET_FUNCTION = re.compile(r"with iterator: \S+: (.*)")
_MAX_PATHS_CHECKED = 200
_FILES_NAMED = 5
_datasets_of = weakref.WeakKeyDictionary()  # iterator -> [weakref to input_fn's datasets]


class InputRecordError(tf.errors.DataLossError):
    """A record of input_fn's data is corrupt or truncated (named with its file)."""

    def __init__(self, message):
        super().__init__(None, None, message)

    def __reduce__(self):
        return type(self), (self.message,)


class InputPipelineError(tf.errors.InvalidArgumentError):
    """input_fn's dataset failed on its records (a parse spec naming an absent feature...)."""

    def __init__(self, message):
        super().__init__(None, None, message)

    def __reduce__(self):
        return type(self), (self.message,)


def remember(iterator, datasets):
    """Records the datasets input_fn returned for the call reading `iterator`."""
    try:
        _datasets_of[iterator] = [weakref.ref(dataset) for dataset in datasets]
    except TypeError:
        pass  # an iterator without weak references: its errors name no file


def files_read_by(iterator) -> list:
    """The existing files named by constants of the pipelines behind `iterator`, sorted."""
    values = []
    for reference in _datasets_of.get(iterator, ()):
        dataset = reference()
        if dataset is not None:
            values.extend(_string_constants(tf_data.dataset_graph_def(dataset)))
    candidates = sorted({v for v in values if ("/" in v or os.sep in v) and len(v) < 4096})
    return [path for path in candidates[:_MAX_PATHS_CHECKED]
            if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path)]


@contextlib.contextmanager
def named_input_errors(iterator, situation):
    """Re-raises input errors of the block naming input_fn's files; `situation` (a str, or a
    function returning one) is the sentence that follows (e.g. the step reached and the last
    intact checkpoint)."""
    try:
        yield
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
        text = str(getattr(error, "message", error))
        if isinstance(error, (InputRecordError, InputPipelineError)) or not any(
                node in text for node in _INPUT_NODES):
            raise
        raise _named(error, text, files_read_by(iterator),
                     situation() if callable(situation) else situation) from None


def _named(error, text, files, situation):
    cause = _cause(text)
    offset = _OFFSET.search(cause)
    if offset is not None:  # only files holding that offset can hold the record
        long_enough = [f for f in files if tf.io.gfile.stat(f).length > int(offset.group(1))]
        files = long_enough or files
    where = _files_phrase(files)
    if isinstance(error, tf.errors.DataLossError):
        what = (f"({cause.split(' at ')[0]} at byte offset {offset.group(1)})" if offset
                else f"({cause})")
        return InputRecordError(
            f"A record of input_fn's data is corrupt or truncated {what} in {where}. "
            f"{situation} Re-create or remove that file, or skip unreadable records with "
            "dataset.apply(tf.data.experimental.ignore_errors()) in input_fn.")
    return InputPipelineError(
        f"input_fn's dataset failed on the records of {where}: {cause}. {situation} Fix "
        "input_fn: e.g. a parse spec (tf.io.FixedLenFeature...) naming a feature the records "
        "do not have needs the right key or a default_value.")


def _cause(text):
    """The line of TensorFlow's message that says what failed, without node annotations."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    skip = ("Graph execution error", "Detected at node", "<stack traces", "File ", "[[")
    lines = [line for line in lines if not line.startswith(skip)] or lines or [text]
    line = re.sub(r"\s*\[\[.*?\]\]|\s*\[Op:\w+\]|\{\{[^}]*\}\}\s*", "", lines[0]).strip()
    inner = _IN_DATASET_FUNCTION.search(line)
    return (inner.group(1) if inner else line).rstrip(".")


def _files_phrase(files):
    if not files:
        return "input_fn's data (its files could not be found from its dataset)"
    if len(files) == 1:
        return files[0]
    shown = ", ".join(files[:_FILES_NAMED])
    more = f" and {len(files) - _FILES_NAMED} more" if len(files) > _FILES_NAMED else ""
    return f"one of the files input_fn reads ({shown}{more})"


def _string_constants(graph_def):
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    for node in nodes:
        if node.op == "Const" and node.attr["dtype"].type == tf.string.as_datatype_enum:
            proto = node.attr["value"].tensor.SerializeToString()
            values = tf.reshape(tf.io.parse_tensor(proto, tf.string), [-1])[:10000]
            for value in values.numpy():
                try:
                    yield value.decode("utf-8")
                except UnicodeDecodeError:
                    continue
