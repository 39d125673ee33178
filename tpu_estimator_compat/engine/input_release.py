"""A call's input iterator, destroyed off the caller's thread when the call is done.

tf.data tunes `AUTOTUNE` parallelism and buffer sizes from a thread of the iterator's own.
In TensorFlow 2.21 that thread can miss its cancellation: `CancellationManager` wakes it
before marking itself cancelled, the thread re-checks too early and sleeps out its
optimisation period (doubling up to 60 s), and destroying the iterator joins it. The
pipeline itself (its threads, buffers, open files) is torn down before that join, which
waits without holding the GIL. So the last reference to a call's iterator is dropped on a
thread of its own: train/evaluate/predict return when their work is done and the next call
starts at once. The thread is not a daemon: a Python thread still inside TensorFlow when
the interpreter finalizes aborts the process when it returns (seen on worker processes), so
a program's exit waits for the destructions still pending (the last call's, at most its
remaining optimisation period).
"""
import threading


class CallInput:
    """Holds one call's input `iterator`; leaving the `with` block hands it to a thread of
    its own, which drops the last reference (the holder keeps none)."""

    def __init__(self, iterator):
        self.iterator = iterator

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        only_reference = [self.iterator]
        self.iterator = None
        threading.Thread(target=only_reference.clear, name="input_iterator_release").start()
