"""TensorFlow's profiler internals behind `tf.contrib.tpu`'s eager profiling calls: a raw
profiler session and the events writer that marks a profile run for TensorBoard."""
from tensorflow.python.client import _pywrap_events_writer
from tensorflow.python.profiler.internal import _pywrap_profiler

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.profiler.internal._pywrap_profiler", "ProfilerSession",
           "a profile's raw XSpace bytes, as the TF1 eager profiler returned them"),
    Symbol("tensorflow.python.client._pywrap_events_writer", "EventsWriter",
           "the empty events file that makes TensorBoard list a profile run"),
)

ProfilerSession = _pywrap_profiler.ProfilerSession
EventsWriter = _pywrap_events_writer.EventsWriter
