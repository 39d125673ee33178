"""TF1 name-based checkpoints: the `model.ckpt-<step>` files and `checkpoint` state file.

A model_dir written here has the layout the original Estimator wrote, keyed by TF1 variable
names, so `tf.train.load_checkpoint`, `tf.compat.v1.train.Saver` and TF 1.x tools read it:

    model_dir/checkpoint                               # CheckpointState text proto
    model_dir/model.ckpt-<step>.index
    model_dir/model.ckpt-<step>.data-00000-of-00001

Everything here runs eagerly, on the host, in cross-replica context. Variables come as a dict
`{tf1_name: variable}`; they may be plain resource variables or `tf.distribute` variables
(`MirroredVariable`, `SyncOnReadVariable`): saving reads their cross-replica value and
restoring assigns every replica's copy.

Which checkpoint (the state file, a damaged one recovered from, paths users give) is
`checkpoint_paths.py`; its functions are importable from here too.

Crash safety: a save writes under a temporary prefix, renames the data file and then the
index into place (an index never exists without its data), then replaces the state file
atomically, and only then deletes checkpoints that fell out of `max_to_keep`. A process killed
at any point leaves a state file that names only complete checkpoints.
"""
import os
import re
import time
import uuid

import tensorflow as tf
from google.protobuf import text_format

from tpu_estimator_compat.state import checkpoint_paths
from tpu_estimator_compat.state import glob_safe
from tpu_estimator_compat.tf_internals import training as tf_training
from tpu_estimator_compat.state.checkpoint_paths import (  # pylint: disable=unused-import
    CHECKPOINT_BASENAME, STATE_FILENAME, CheckpointDeletedError, CheckpointNotFoundError,
    CorruptCheckpointStateError, ForeignCheckpointError, StateFileIsADirectoryError,
    latest_checkpoint, previous_checkpoints, resolve_checkpoint_path, warn_of_newer_checkpoints)

_INDEX_SUFFIX = checkpoint_paths.INDEX_SUFFIX
_DATA_SUFFIX = ".data-00000-of-00001"
_META_SUFFIX = ".meta"
_TEMP_MARKER = "_temp_"

_HOW_TO_PARTIALLY_RESTORE = (
    "To load only the matching variables, train in a fresh model_dir with "
    "`warm_start_from=WarmStartSettings(ckpt_to_initialize_from=..., vars_to_warm_start=...)` "
    "or call `tf.compat.v1.train.init_from_checkpoint(ckpt, assignment_map)` in scaffold_fn; "
    "to train this model from scratch, use a new model_dir.")


class CorruptCheckpointError(tf.errors.DataLossError):
    """A checkpoint named by a path or a state file cannot be read (missing or damaged file).

    Attributes:
      checkpoint_path: the unreadable checkpoint prefix.
      fallback_paths: older checkpoints listed in the same directory's state file, newest
        first; restoring the first of them is the usual recovery.
    """

    def __init__(self, checkpoint_path, problem, fallback_paths):
        self.checkpoint_path = checkpoint_path
        self.fallback_paths = list(fallback_paths)
        state_file = os.path.join(os.path.dirname(checkpoint_path), STATE_FILENAME)
        if self.fallback_paths:
            fix = (f"To fall back to the previous checkpoint listed in {state_file}, restore "
                   f"{self.fallback_paths[0]} instead (previous_checkpoints(model_dir) lists "
                   "all older ones, newest first), or delete the damaged checkpoint's files.")
        else:
            fix = (f"No older checkpoint is listed in {state_file}: delete the damaged files and "
                   "train from scratch (or point model_dir at a backup).")
        self._problem = problem
        super().__init__(None, None, f"Cannot read checkpoint {checkpoint_path}: {problem}. {fix}")

    def __reduce__(self):
        return type(self), (self.checkpoint_path, self._problem, self.fallback_paths)


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (disk full, permissions); older ones are intact."""

    def __init__(self, model_dir, step, cause):
        what = (f"the checkpoint for step {step}" if step is not None
                else "files (checked before training started)")
        blocking = _file_in_the_way(model_dir)
        if blocking is not None:
            super().__init__(
                f"Could not write {what} into {model_dir}: {blocking} is a file, not a "
                "directory, so model_dir cannot be created there. Choose another model_dir, "
                "or move that file away.")
            return
        try:
            latest = latest_checkpoint(model_dir)
        except (tf.errors.OpError, OSError):
            latest = None
        kept = (f"The previous checkpoint, {latest}, is intact" if latest
                else "No earlier checkpoint exists")
        super().__init__(
            f"Could not write {what} into {model_dir}: {cause}. {kept}. Free disk space or "
            "fix the directory's permissions (or choose another model_dir), then rerun to "
            "resume.")


def _file_in_the_way(model_dir):
    """`model_dir` or its nearest existing ancestor when that is not a directory (local paths;
    None otherwise)."""
    path = os.path.abspath(os.fspath(model_dir))
    if "://" in os.fspath(model_dir):
        return None
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path if os.path.exists(path) and not os.path.isdir(path) else None


def require_writable(model_dir):
    """Fails before training when model_dir cannot take files, instead of at the first save.

    Raises:
      CheckpointWriteError: model_dir cannot be created or written.
    """
    probe = os.path.join(os.fspath(model_dir), f".write_test{_TEMP_MARKER}{uuid.uuid4().hex}")
    try:
        tf.io.gfile.makedirs(os.fspath(model_dir))
        with tf.io.gfile.GFile(probe, "w") as file:
            file.write("ok")
        tf.io.gfile.remove(probe)
    except (tf.errors.OpError, OSError) as error:
        raise CheckpointWriteError(model_dir, None, error) from None  # the message has it all


class CheckpointSaver:
    """Writes TF1-layout checkpoints of a `{tf1_name: variable}` dict into a model_dir.

    Retention follows `tf.compat.v1.train.Saver`: the newest `max_to_keep` checkpoints are kept
    (0 or None keeps all), and a checkpoint about to be deleted is kept for good instead when
    it was written more than `keep_checkpoint_every_n_hours` after the last one kept that way
    (or after the saver's creation). Checkpoints already listed in the model_dir's state
    file are adopted, so retention continues across restarts. Kept-for-good checkpoints leave
    `all_model_checkpoint_paths`, as in TF1; with `max_to_keep` 0/None every checkpoint stays
    listed there.

    Args:
      model_dir: directory to write into (created if needed; any tf.io.gfile filesystem).
      max_to_keep: how many recent checkpoints to keep; 0 or None keeps all.
      keep_checkpoint_every_n_hours: additionally keep one checkpoint per this many hours
        (None disables this).
    """

    def __init__(self, model_dir: str, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = 10000.0):
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 0):
            raise ValueError(
                f"`max_to_keep` ({max_to_keep!r}) must be a non-negative int or None "
                "(0 or None keeps every checkpoint).")
        if keep_checkpoint_every_n_hours is None:
            keep_checkpoint_every_n_hours = float("inf")
        if not keep_checkpoint_every_n_hours > 0:
            raise ValueError(
                f"`keep_checkpoint_every_n_hours` ({keep_checkpoint_every_n_hours!r}) must be a "
                "positive number of hours, or None to keep no extra checkpoints.")
        self._model_dir = checkpoint_paths.as_str(model_dir)
        self._max_to_keep = max_to_keep
        self._keep_interval_secs = keep_checkpoint_every_n_hours * 3600.0
        self._kept = []  # [(checkpoint_path, timestamp)], oldest first
        self._last_preserved = time.time()
        tf.io.gfile.makedirs(self._model_dir)
        _remove_temporaries(self._model_dir)
        self._adopt_existing_state()

    @property
    def last_checkpoints(self) -> list:
        """Checkpoints managed by `max_to_keep`, oldest first (as in the state file)."""
        return [path for path, _ in self._kept]

    def save(self, named_variables: dict, global_step, meta_graph: bytes = None) -> str:
        """Writes `model_dir/model.ckpt-<global_step>` and makes it the latest checkpoint.

        Runs eagerly; all tensors go to disk in one SaveV2 op.

        Args:
          named_variables: `{tf1_name: variable}`; distributed variables are saved with their
            cross-replica value (SyncOnRead variables aggregated, e.g. MEAN).
          global_step: the step that names the checkpoint (int, numpy or scalar tensor).
          meta_graph: a serialized MetaGraphDef to write as `model.ckpt-<step>.meta`, or None.

        Returns:
          The checkpoint prefix, e.g. `model_dir/model.ckpt-100`.
        """
        if not named_variables:
            raise ValueError("`named_variables` is empty: there is nothing to save. Pass the "
                             "model's `{tf1_name: variable}` dict.")
        step = int(global_step)
        path = os.path.join(self._model_dir, f"{CHECKPOINT_BASENAME}-{step}")
        temp = f"{path}{_TEMP_MARKER}{uuid.uuid4().hex}"
        names, tensors = values_to_save(named_variables)
        keys = [checkpoint_key(name, named_variables[name]) for name in names]
        try:
            tf.raw_ops.SaveV2(prefix=temp, tensor_names=[key for key, _ in keys],
                              shape_and_slices=[spec for _, spec in keys], tensors=tensors)
            if meta_graph:
                with tf.io.gfile.GFile(temp + _META_SUFFIX, "wb") as f:
                    f.write(meta_graph)
        except BaseException:
            _remove_files(temp)
            raise
        if tf.io.gfile.exists(path + _INDEX_SUFFIX):
            self._retire_overwritten(path)
        if meta_graph:
            tf.io.gfile.rename(temp + _META_SUFFIX, path + _META_SUFFIX, overwrite=True)
        tf.io.gfile.rename(temp + _DATA_SUFFIX, path + _DATA_SUFFIX, overwrite=True)
        tf.io.gfile.rename(temp + _INDEX_SUFFIX, path + _INDEX_SUFFIX, overwrite=True)
        self._kept.append((path, time.time()))
        doomed = self._apply_retention()
        _write_state(self._model_dir, self._kept, self._last_preserved)
        for old_path in doomed:
            _remove_files(old_path)
        return path

    def write_meta_graph(self, path: str, meta_graph: bytes):
        """Writes `meta_graph` as `<path>.meta` beside a checkpoint saved without one (the
        initial checkpoint's, written after the first loop); nothing if the checkpoint is
        gone (deleted meanwhile)."""
        if not tf.io.gfile.exists(path + _INDEX_SUFFIX):
            return
        temp = f"{path}{_TEMP_MARKER}{uuid.uuid4().hex}{_META_SUFFIX}"
        try:
            with tf.io.gfile.GFile(temp, "wb") as f:
                f.write(meta_graph)
        except BaseException:
            if tf.io.gfile.exists(temp):
                tf.io.gfile.remove(temp)
            raise
        tf.io.gfile.rename(temp, path + _META_SUFFIX, overwrite=True)

    def _adopt_existing_state(self):
        state = checkpoint_paths.read_state(self._model_dir)
        if state is None:
            return
        paths = [checkpoint_paths.localize(p, self._model_dir) for p in state.all_model_checkpoint_paths]
        stamps = list(state.all_model_checkpoint_timestamps)
        if len(stamps) != len(paths):
            stamps = [None] * len(paths)
        latest = checkpoint_paths.localize(state.model_checkpoint_path, self._model_dir)
        if latest and latest not in paths:
            paths.append(latest)
            stamps.append(None)
        for path, stamp in zip(paths, stamps):
            if tf.io.gfile.exists(path + _INDEX_SUFFIX):
                mtime = tf.io.gfile.stat(path + _INDEX_SUFFIX).mtime_nsec / 1e9
                self._kept.append((path, stamp if stamp is not None else mtime))
        if state.last_preserved_timestamp > 0:
            self._last_preserved = state.last_preserved_timestamp

    def _retire_overwritten(self, path):
        """Before a save replaces `path` (same step again), stop the state file naming it."""
        self._kept = [(p, t) for p, t in self._kept if p != path]
        if self._kept:
            _write_state(self._model_dir, self._kept, self._last_preserved)
        elif tf.io.gfile.exists(os.path.join(self._model_dir, STATE_FILENAME)):
            tf.io.gfile.remove(os.path.join(self._model_dir, STATE_FILENAME))
        tf.io.gfile.remove(path + _INDEX_SUFFIX)

    def _apply_retention(self):
        """Drops checkpoints beyond `max_to_keep`; returns the ones whose files should go."""
        doomed = []
        while self._max_to_keep and len(self._kept) > self._max_to_keep:
            path, stamp = self._kept.pop(0)
            if stamp > self._last_preserved + self._keep_interval_secs:
                self._last_preserved = stamp  # kept for good, no longer listed
            else:
                doomed.append(path)
        return doomed


def values_to_save(named_variables: dict):
    """`(sorted names, their cross-replica values)`: what `CheckpointSaver.save` writes.

    Under MultiWorkerMirroredStrategy reading a SyncOnRead variable is a collective across
    workers, so every worker calls this in the same order (`multi_worker.NonChiefSaver`),
    while only the chief writes the values.
    """
    names = sorted(named_variables)
    return names, [named_variables[name].read_value() for name in names]


def checkpoint_key(name, variable):
    """`(tensor name, slice spec)` under which `variable` (TF1 name `name`) is saved: a part
    of a partitioned variable (`emb/part_1`) as its slice of the whole one (`emb`, spec
    `"10 4 5,5:0,4"`), as TF1's Saver saved it; any other variable whole (`(name, "")`)."""
    info = tf_training.save_slice_info(variable)
    return (name, "") if info is None else info


def save_to_prefix(named_variables: dict, prefix: str, listed, dropped=()) -> str:
    """What `tf.compat.v1.train.Saver.save(sess, prefix)` writes: `prefix.index` and
    `prefix.data-00000-of-00001` of `{tf1_name: variable}`, and unless `listed` is None the
    state file of prefix's directory naming `listed` (checkpoint prefixes, oldest first,
    `prefix` last) as given, as a Saver without `save_relative_paths` did; then deletes the
    files of the checkpoints `dropped` (past the Saver's max_to_keep). Returns `prefix`."""
    if not named_variables:
        raise ValueError("The Saver has no variables to save.")
    directory = os.path.dirname(prefix) or "."
    if not tf.io.gfile.isdir(directory):
        raise ValueError(
            f"Parent directory of {prefix} doesn't exist, can't save (create it first, as "
            "TF1's Saver required).")
    names, tensors = values_to_save(named_variables)
    keys = [checkpoint_key(name, named_variables[name]) for name in names]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=[key for key, _ in keys],
                      shape_and_slices=[spec for _, spec in keys], tensors=tensors)
    if listed is not None:
        now = time.time()
        _write_state(directory, [(path, now) for path in listed], now, relative=False)
    for old_prefix in dropped:
        _remove_files(old_prefix)
    return prefix


def non_finite_variables(named_variables: dict) -> list:
    """Sorted names of the floating-point variables holding a NaN or an Inf."""
    names = sorted(n for n, v in named_variables.items() if v.dtype.is_floating)
    if not names:
        return []
    finite = tf.stack([tf.reduce_all(tf.math.is_finite(named_variables[n].read_value()))
                       for n in names]).numpy()
    return [name for name, ok in zip(names, finite) if not ok]


def open_reader(ckpt_dir_or_path: str):
    """A `tf.train.load_checkpoint` reader; raises `CorruptCheckpointError` if unreadable."""
    path = resolve_checkpoint_path(ckpt_dir_or_path)
    try:
        return tf.train.load_checkpoint(glob_safe.readable_prefix(path))
    except (tf.errors.OpError, ValueError) as e:
        raise corrupt_error(path, e) from e


def read_tensors(checkpoint_path: str, names, dtypes, slices=None) -> list:
    """Reads `names` (stored with `dtypes`; `slices`: a slice spec per name, "" for the whole
    tensor) from a checkpoint prefix in one RestoreV2 op."""
    if not names:
        return []
    try:
        return tf.raw_ops.RestoreV2(prefix=glob_safe.readable_prefix(checkpoint_path),
                                    tensor_names=list(names),
                                    shape_and_slices=list(slices or [""] * len(names)),
                                    dtypes=list(dtypes))
    except tf.errors.OpError as e:
        raise corrupt_error(checkpoint_path, e) from e


def restore(named_variables: dict, checkpoint_path: str) -> None:
    """Assigns every variable its value from a checkpoint, by TF1 name; all or nothing.

    Runs eagerly. Before assigning anything it checks that each variable is in the checkpoint
    with the same shape and a compatible dtype (same kind: floating/floating or
    integer/integer, cast on assignment). Tensors in the checkpoint that the model lacks are
    ignored, as with a TF1 `Saver(var_list)`.

    Args:
      named_variables: `{tf1_name: variable}`; distributed variables get every replica's copy
        set.
      checkpoint_path: a checkpoint prefix, or a model_dir (its latest checkpoint).

    Raises:
      ValueError: listing every missing variable and every shape/dtype mismatch.
      CorruptCheckpointError: the checkpoint's index or data file is missing or damaged.
    """
    path = resolve_checkpoint_path(checkpoint_path)
    reader = open_reader(path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    missing, shape_errors, dtype_errors = [], [], []
    keys = {}
    for name in sorted(named_variables):
        variable = named_variables[name]
        key, spec = keys[name] = _restore_key(name, variable, shapes)
        shape = _full_shape(spec) or variable.shape
        if key not in shapes:
            missing.append(name)
        elif not shape.is_compatible_with(shapes[key]):
            shape_errors.append(f"{key}: model {tuple(shape)} vs checkpoint "
                                f"{tuple(shapes[key])}")
        elif not dtypes_compatible(variable.dtype, dtypes[key]):
            dtype_errors.append(f"{key}: model {variable.dtype.name} vs checkpoint "
                                f"{dtypes[key].name}")
    if missing or shape_errors or dtype_errors:
        lines = [f"Checkpoint {path} does not match the model's variables:"]
        if missing:
            lines.append(f"  missing from the checkpoint ({len(missing)}): {missing}")
        if shape_errors:
            lines.append(f"  shape mismatches ({len(shape_errors)}): {'; '.join(shape_errors)}")
        if dtype_errors:
            lines.append(f"  dtype mismatches ({len(dtype_errors)}): {'; '.join(dtype_errors)}")
        lines.append(_HOW_TO_PARTIALLY_RESTORE)
        raise ValueError("\n".join(lines))
    names = sorted(named_variables)
    values = read_tensors(path, [keys[name][0] for name in names],
                          [dtypes[keys[name][0]] for name in names],
                          [keys[name][1] for name in names])
    assign_all([(named_variables[name], value) for name, value in zip(names, values)])


def _restore_key(name, variable, shapes):
    """`checkpoint_key`, or for a part of a partitioned variable in a checkpoint that has it
    as a variable of its own (written before parts were saved as slices) `(name, "")`."""
    key, spec = checkpoint_key(name, variable)
    if spec and key not in shapes and name in shapes:
        return name, ""
    return key, spec


def _full_shape(spec):
    """The whole variable's shape in a slice spec (`"10 4 5,5:0,4"` -> [10, 4]), or None."""
    if not spec:
        return None
    return tf.TensorShape([int(d) for d in spec.split(" ")[:-1]])


def assign_all(variables_and_values) -> None:
    """Assigns values (cast to each variable's dtype) in cross-replica context."""
    for variable, value in variables_and_values:
        if value.dtype != variable.dtype:
            value = tf.cast(value, variable.dtype)
        variable.assign(value)


def dtypes_compatible(variable_dtype, checkpoint_dtype) -> bool:
    """Whether a checkpoint tensor can be assigned to a variable (equal or same numeric kind)."""
    variable_dtype, checkpoint_dtype = tf.as_dtype(variable_dtype), tf.as_dtype(checkpoint_dtype)
    if variable_dtype == checkpoint_dtype:
        return True
    return ((variable_dtype.is_floating and checkpoint_dtype.is_floating)
            or (variable_dtype.is_integer and checkpoint_dtype.is_integer))


def load_variable(ckpt_dir_or_path: str, name: str):
    """The value of variable `name` in a checkpoint (or a model_dir's latest) as numpy."""
    path = resolve_checkpoint_path(ckpt_dir_or_path)
    reader = open_reader(path)
    if not reader.has_tensor(name):
        raise tf.errors.NotFoundError(
            None, None,
            f"Variable {name} is not in checkpoint {path}. "
            f"Its variables are: {sorted(reader.get_variable_to_shape_map())}")
    try:
        return reader.get_tensor(name)
    except (tf.errors.OpError, IndexError, ValueError) as e:  # a truncated data file
        raise corrupt_error(path, e) from e


def list_variable_names(ckpt_dir_or_path: str) -> list:
    """Sorted names of the variables in a checkpoint (or a model_dir's latest)."""
    return sorted(open_reader(ckpt_dir_or_path).get_variable_to_shape_map())


def corrupt_error(path, cause):
    """A CorruptCheckpointError naming the damaged file and the fallbacks of its model_dir
    (`cause`: the error reading it); a `CheckpointDeletedError` when the checkpoint is gone
    because a trainer's retention deleted it (it is no longer in the state file)."""
    if checkpoint_paths.deleted_by_retention(path):
        return checkpoint_paths.CheckpointDeletedError([path], os.path.dirname(path) or ".")
    index = path + _INDEX_SUFFIX
    detail = (str(getattr(cause, "message", cause)).strip().splitlines()
              or [type(cause).__name__])[-1]
    detail = re.sub(r"^\{\{[^}]*\}\}\s*|\s*\[Op:\w+\]$", "", detail)
    if not tf.io.gfile.exists(index):
        problem = f"its index file {index} is missing ({detail})"
    elif not _index_readable(path):
        problem = f"its index file {index} is truncated or damaged ({detail})"
    else:
        data_files = _data_files(path) or [path + _DATA_SUFFIX]
        problem = f"its data file {', '.join(data_files)} is truncated or damaged ({detail})"
    directory = os.path.dirname(path)
    fallbacks = [p for p in previous_checkpoints(directory) if p != path] if directory else []
    return CorruptCheckpointError(path, problem, fallbacks)


def _index_readable(prefix):
    """Whether a checkpoint's index opens (the data files are only read for a tensor)."""
    try:
        tf.train.load_checkpoint(glob_safe.readable_prefix(prefix))
    except (tf.errors.OpError, ValueError):
        return False
    return True


def _write_state(model_dir, kept, last_preserved, relative=True):
    """Atomically replaces the state file. Paths are stored as TF1's Estimator Saver wrote
    them (`save_relative_paths=True`): the checkpoint's file name, relative to model_dir
    whether model_dir is relative or absolute (`relative=False`: as given, as a plain
    Saver wrote them). A failed write leaves no temporary file."""
    stored = os.path.basename if relative else (lambda path: path)
    state = tf_training.CheckpointState(
        model_checkpoint_path=stored(kept[-1][0]),
        all_model_checkpoint_paths=[stored(p) for p, _ in kept],
        all_model_checkpoint_timestamps=[t for _, t in kept],
        last_preserved_timestamp=last_preserved)
    final = os.path.join(model_dir, STATE_FILENAME)
    temp = f"{final}{_TEMP_MARKER}{uuid.uuid4().hex}"
    try:
        with tf.io.gfile.GFile(temp, "w") as f:
            f.write(text_format.MessageToString(state))
        tf.io.gfile.rename(temp, final, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.remove(temp)
        raise


def _data_files(prefix):
    """The existing `.data-*` shard files of a checkpoint prefix."""
    directory, base = os.path.split(prefix)
    if not tf.io.gfile.isdir(directory or "."):
        return []
    return sorted(os.path.join(directory, name) for name in tf.io.gfile.listdir(directory or ".")
                  if name.startswith(base + ".data-"))


def _remove_files(prefix):
    """Deletes a checkpoint's files, index first so it never looks complete without data."""
    for name in [prefix + _INDEX_SUFFIX, *_data_files(prefix), prefix + _META_SUFFIX]:
        if tf.io.gfile.exists(name):
            tf.io.gfile.remove(name)


def _remove_temporaries(model_dir):
    """Deletes the files that saves interrupted by a crash left behind."""
    for name in tf.io.gfile.listdir(model_dir):
        leftover_save = name.startswith(CHECKPOINT_BASENAME + "-") and _TEMP_MARKER in name
        leftover_state = name.startswith(STATE_FILENAME + _TEMP_MARKER)
        path = os.path.join(model_dir, name)
        if (leftover_save or leftover_state) and not tf.io.gfile.isdir(path):
            tf.io.gfile.remove(path)
