"""`check`'s note on a project's own copy of TensorFlow's `tpu_estimator.py`.

Research repositories of the TF 1.x era (zihangdai/xlnet, kimiyoung/transformer-xl...) ship a
modified copy of TensorFlow's `tpu_estimator.py`. Its imports are TensorFlow 1.x's internals
(`contrib.tpu.python.tpu.error_handling`, `python.estimator.util`...), which `check` marks
UNSUPPORTED one by one; the fix is for the file as a whole: use the TPUEstimator this package
serves at TensorFlow's own path instead of the copy.
"""
import ast

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


def note(filename, classes):
    """The note `check` prints under a copy's file name."""
    return (f"note: {filename} is a copy of TensorFlow's tpu_estimator.py (it defines "
            f"{', '.join(classes)}) on TensorFlow 1.x internals, which TensorFlow 2 removed: "
            "its UNSUPPORTED names below are those internals. Fix: import TensorFlow's own, "
            "which this package serves (`from tensorflow.contrib.tpu.python.tpu import "
            "tpu_estimator`, or `tf.contrib.tpu.TPUEstimator`), where the program imports "
            "the copy, and delete the copy; move what the copy changed into model_fn, hooks "
            "or a TPUEstimator subclass.")
