"""Checks an export makes before it writes anything: where it goes, and whether the graph the
receiver and model_fn built fits the checkpoint it restores.

A graph that does not fit would otherwise export fine: resource variables restore a
checkpoint tensor of any shape, so a receiver placeholder of width 7 for a model trained on
width 4 gives a SavedModel whose graph says `(7, 1)` and whose variables hold `(4, 1)`, which
fails only when served.
"""
import os

import tensorflow as tf

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.tf_internals import training as tf_training


class ExportWriteError(OSError):
    """The SavedModel could not be written (disk full, permissions); nothing was exported."""

    def __init__(self, export_dir_base, cause):
        self.export_dir_base = export_dir_base
        super().__init__(
            f"Could not write the SavedModel into {export_dir_base}: {_cause(cause)}. "
            "Nothing was exported and the partial export was removed; the checkpoint is "
            "unchanged. Free "
            "disk space or fix the directory's permissions (or choose another "
            "export_dir_base), then export again.")


_WRITE_CAUSES = ("No space left", "Permission denied", "Read-only file system",
                 "Disk quota exceeded")


def is_write_error(error):
    """Whether an error is the file system refusing a write (not model code failing)."""
    return any(cause in str(error) for cause in _WRITE_CAUSES)


def _cause(error):
    """The line of an error's message that tells why the write failed."""
    lines = [line.strip() for line in str(getattr(error, "message", error)).splitlines()
             if line.strip()]
    return next((line for line in lines if is_write_error(line)),
                lines[0] if lines else type(error).__name__)


def check_export_dir_base(export_dir_base):
    """Raises ValueError if export_dir_base, or a directory above it, is a file."""
    path = os.fsdecode(export_dir_base)
    while path and not tf.io.gfile.exists(path):
        parent = os.path.dirname(path.rstrip("/"))
        if parent == path:
            return
        path = parent
    if path and not tf.io.gfile.isdir(path):
        what = ("export_dir_base" if path == os.fsdecode(export_dir_base)
                else f"{path}, above export_dir_base {os.fsdecode(export_dir_base)},")
        raise ValueError(
            f"Cannot export: {what} is a file, not a directory; nothing was written. Pass a "
            "directory path (it is created if missing) as export_dir_base; exports go into "
            "a timestamped sub-directory of it.")


def check_graph_fits_checkpoint(saver, checkpoint_path):
    """Raises ValueError naming every variable of the export graph (as `saver` restores it)
    whose shape or dtype differs from the checkpoint's tensor of that name."""
    reader = checkpoints.open_reader(checkpoint_path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    mismatches = []
    for name, variable in sorted(_saved_variables(saver).items()):
        if name not in shapes:
            continue  # the restore reports variables missing from the checkpoint
        dtype = variable.dtype.base_dtype
        if not variable.shape.is_compatible_with(shapes[name]) or dtype != dtypes[name]:
            mismatches.append(f"{name}: graph {_describe(variable.shape, dtype)} vs "
                              f"checkpoint {_describe(shapes[name], dtypes[name])}")
    if mismatches:
        raise ValueError(
            f"Cannot export: the graph built from serving_input_receiver_fn and model_fn does "
            f"not fit checkpoint {checkpoint_path} ({len(mismatches)} variable(s)): "
            f"{'; '.join(mismatches)}. Nothing was written. Make the receiver's tensors the "
            "shapes and dtypes of the features the model was trained on (e.g. the "
            "placeholder's last dimension), or export a checkpoint of this model.")


def _saved_variables(saver):
    """`{checkpoint name: variable}` of what `saver` restores (every global variable, or
    its `var_list`)."""
    var_list = tf_training.saver_var_list(saver)
    if isinstance(var_list, dict):
        return {name: v for name, v in var_list.items() if isinstance(v, tf.Variable)}
    if var_list is None:
        var_list = tf.compat.v1.global_variables()
    return {v.op.name: v for v in var_list if isinstance(v, tf.Variable)}


def _describe(shape, dtype):
    return f"{tuple(tf.TensorShape(shape).as_list())} {tf.as_dtype(dtype).name}"
