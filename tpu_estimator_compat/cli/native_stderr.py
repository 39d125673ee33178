"""Keeps TensorFlow's native start-up lines (`oneDNN custom operations are on`, `Could not find
cuda drivers`...) out of a command's output.

TensorFlow 2.21's C++ libraries log them through absl before anything reads
`TF_CPP_MIN_LOG_LEVEL`, straight to file descriptor 2, once per shared library loaded. A
command that only reads TensorFlow's API (`check`) runs with descriptor 2 sent to a temporary
file; Python's own `sys.stderr` is left alone, so the command's messages still reach the
terminal. If the command fails, the captured lines are printed after all: they may explain it.
"""
import contextlib
import os
import sys
import tempfile


@contextlib.contextmanager
def native_stderr_captured():
    sys.stderr.flush()
    saved = os.dup(2)
    python_stderr = sys.stderr
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        # Python's messages keep the real stderr (a new file object on the saved descriptor;
        # left open: a logging handler made meanwhile may hold it).
        sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1,
                               encoding=python_stderr.encoding, errors="backslashreplace")
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            sys.stderr = python_stderr
            os.dup2(saved, 2)
            os.close(saved)
            if failed:
                captured.seek(0)
                sys.stderr.write(captured.read().decode(errors="replace"))
                sys.stderr.flush()
