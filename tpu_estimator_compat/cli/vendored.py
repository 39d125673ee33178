"""`check`'s and `run`'s note on a project's own copy of TensorFlow's `tpu_estimator.py`.

Research repositories of the TF 1.x era (zihangdai/xlnet, kimiyoung/transformer-xl...) ship a
modified copy of TensorFlow's `tpu_estimator.py`. Its imports are TensorFlow 1.x's internals
(`contrib.tpu.python.tpu.error_handling`, `python.estimator.util`...), which `check` marks
UNSUPPORTED one by one; the fix is for the file as a whole: use the TPUEstimator this package
serves at TensorFlow's own path instead of the copy. `run` adds the same fix to the ImportError
such a copy's first unserved import raises, when the program lets it through.
"""
import ast
import os

# Classes of TensorFlow's tpu_estimator.py (TF 1.x) besides TPUEstimator itself.
_INTERNAL_CLASSES = frozenset({"_InputPipeline", "_ModelFnWrapper", "_OutfeedHostCall",
                               "_InternalTPUContext", "_TPUStopAtStepHook",
                               "_OpQueueContext", "_InfeedOutfeedSessionHook"})


def copied_classes(source):
    """The TensorFlow tpu_estimator.py classes `source` defines at its top level, when it
    defines TPUEstimator and at least one of TensorFlow's internal ones; else ()."""
    names = {node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}
    internal = sorted(names & _INTERNAL_CLASSES)
    return ("TPUEstimator", *internal) if "TPUEstimator" in names and internal else ()


def note(filename, classes, failing="its UNSUPPORTED names below are those internals"):
    """The note `check` prints under a copy's file name (`failing`: what of the copy fails)."""
    return (f"note: {filename} is a copy of TensorFlow's tpu_estimator.py (it defines "
            f"{', '.join(classes)}) on TensorFlow 1.x internals, which TensorFlow 2 removed: "
            f"{failing}. Fix: import TensorFlow's own, "
            "which this package serves (`from tensorflow.contrib.tpu.python.tpu import "
            "tpu_estimator`, or `tf.contrib.tpu.TPUEstimator`), where the program imports "
            "the copy, and delete the copy; move what the copy changed into model_fn, hooks "
            "or a TPUEstimator subclass.")


def import_error_with_fix(error, is_program_file):
    """The ImportError `run` raises for `error`, which a program let through: `error`'s
    message, then the note, when the deepest program file (`is_program_file(path)`) its
    traceback passes through is a copy of tpu_estimator.py; else None (`error` stands)."""
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    path = next((f for f in reversed(frames) if os.path.isfile(f) and is_program_file(f)), None)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            classes = copied_classes(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    if not classes:
        return None
    return ImportError(f"{error}\n{note(path, classes, 'this import is one of those internals')}",
                       name=error.name, path=error.path)
