"""Which checkpoint: the model_dir's `checkpoint` state file, and paths users give.

One resolution path for train, evaluate, predict, export, `get_variable_value` and warm
starting, with the same named errors:

* `latest_checkpoint(model_dir)`: the checkpoint the state file names. A state file that is
  torn or garbled, names no checkpoint, or is missing beside `model.ckpt-<step>` files, is
  not taken for "no checkpoint" (which would restart training from step 0 and overwrite
  `model.ckpt-0`...): the newest readable `model.ckpt-<step>` in model_dir takes its place,
  with a warning in the log (the file is rewritten at the next save); if none is readable,
  `CorruptCheckpointStateError`. Only checkpoints inside model_dir are its own: a state
  file naming another directory's checkpoint (a copied model_dir) means the one of that file
  name in model_dir (`localize`), else `ForeignCheckpointError`; retention never deletes
  another directory's files. A named checkpoint of which no file exists gives the newest one
  in model_dir (warning); `warn_of_newer_checkpoints` tells training when the state file
  names an older checkpoint than model_dir holds; a directory in the state file's place
  raises `StateFileIsADirectoryError`.
* `resolve_checkpoint_path(path)`: a directory gives its latest checkpoint, a prefix itself;
  a path where nothing exists raises `CheckpointNotFoundError`, listing what is there, or
  `CheckpointDeletedError` when a trainer's retention deleted it (older than every
  checkpoint the state file lists): "deleted by retention", not "corrupt".

Damaged checkpoint files are reported when read (`checkpoints.CorruptCheckpointError`).
"""
import os
import re

import tensorflow as tf
from absl import logging
from google.protobuf import text_format

from tpu_estimator_compat.state import glob_safe
from tpu_estimator_compat.tf_internals import training as tf_training

CHECKPOINT_BASENAME = "model.ckpt"
STATE_FILENAME = "checkpoint"
INDEX_SUFFIX = ".index"
_INDEX_FILE = re.compile(re.escape(CHECKPOINT_BASENAME) + r"-(\d+)" + re.escape(INDEX_SUFFIX)
                         + "$")
_STEP = re.compile(re.escape(CHECKPOINT_BASENAME) + r"-(\d+)$")
_STATE_READS = 3  # state files read while a trainer's retention moves the latest on
_recovered = {}  # (state file, its bytes, checkpoint steps) -> state: checked, logged once
_MISSING = "missing"  # the problem of a state file that does not exist


class CorruptCheckpointStateError(tf.errors.DataLossError):
    """The `checkpoint` state file is missing or damaged and no checkpoint in its directory
    is readable.

    Raised instead of starting training over (which would overwrite `model.ckpt-0`).
    """

    def __init__(self, state_file, problem):
        self.state_file = state_file
        self._problem = problem
        if problem == _MISSING:
            fresh = (f"delete the {CHECKPOINT_BASENAME}-* files of "
                     f"{os.path.dirname(state_file) or '.'}")
        else:
            fresh = f"delete {state_file}"
        super().__init__(
            None, None,
            f"The checkpoint state file {state_file} is {_damage(problem)} and its directory "
            f"holds no readable {CHECKPOINT_BASENAME}-<step> checkpoint to go on from; nothing "
            f"was run or overwritten. To train from scratch in this model_dir, {fresh}; to "
            "keep the earlier training, restore model_dir from a backup.")

    def __reduce__(self):
        return type(self), (self.state_file, self._problem)


class CheckpointNotFoundError(tf.errors.NotFoundError, ValueError):
    """A checkpoint path given by the user (`checkpoint_path=`, `warm_start_from`...) names
    nothing that exists: no checkpoint prefix, no directory."""

    def __init__(self, path, message):
        self.path = path
        self._message = message
        super().__init__(None, None, message)

    def __reduce__(self):
        return type(self), (self.path, self._message)


class ForeignCheckpointError(CheckpointNotFoundError):
    """The state file names a checkpoint of another directory (absolute paths, as TF1's
    `Saver` wrote by default, in a copied model_dir) and model_dir has no file of that name.

    Checkpoints outside model_dir are never read as its latest, nor deleted by its retention.
    """

    def __init__(self, model_dir, foreign_path):
        self.model_dir = model_dir
        self.foreign_path = foreign_path
        name = os.path.basename(foreign_path)
        super().__init__(foreign_path, (
            f"The checkpoint state file {os.path.join(model_dir, STATE_FILENAME)} names "
            f"{foreign_path}, outside model_dir {model_dir}, which holds no {name} (was "
            "model_dir copied from that directory?). Checkpoints outside model_dir are never "
            f"restored nor deleted as its own: copy {foreign_path}.* into {model_dir}, or "
            f"pass checkpoint_path='{foreign_path}' to read it where it is, or delete "
            f"{os.path.join(model_dir, STATE_FILENAME)} to go on from the newest checkpoint "
            "in model_dir."))

    def __reduce__(self):
        return type(self), (self.model_dir, self.foreign_path)


class CheckpointDeletedError(CheckpointNotFoundError):
    """The checkpoint being restored was deleted (by a trainer's retention) while it was read.

    Attributes:
      paths: the checkpoints that vanished, in the order they were tried.
    """

    def __init__(self, paths, model_dir=None):
        self.paths = list(paths)
        self.model_dir = model_dir
        if model_dir is None:
            fix = ("Pass checkpoint_path=None to use the newest checkpoint of model_dir, or "
                   "copy the checkpoint out of the trainer's model_dir first.")
        else:
            fix = (f"The trainer writing {model_dir} deletes checkpoints beyond its "
                   "keep_checkpoint_max faster than this process restores one: raise the "
                   "trainer's RunConfig(keep_checkpoint_max=...) or save less often "
                   "(save_checkpoints_steps/_secs).")
        super().__init__(self.paths[-1], (
            f"Checkpoint {', then '.join(self.paths)} deleted while we read it: deleted by "
            f"retention (a trainer's keep_checkpoint_max) or by another process, not damaged. "
            f"{fix}"))

    def __reduce__(self):
        return type(self), (self.paths, self.model_dir)


def deleted_by_retention(path) -> bool:
    """Whether checkpoint `path` is gone (no index) the way retention deletes: its directory's
    state file no longer lists it, and lists only newer checkpoints (retention deletes the
    oldest first). A path that never existed among them is not taken for deleted."""
    directory = os.path.dirname(path) or "."
    match = _STEP.search(os.path.basename(path))
    if (match is None or tf.io.gfile.exists(path + INDEX_SUFFIX)
            or not checkpoint_steps(directory)):
        return False
    try:
        state = read_state(directory)
    except CorruptCheckpointStateError:
        return False
    listed = [_STEP.search(os.path.basename(p))
              for p in [state.model_checkpoint_path, *state.all_model_checkpoint_paths]]
    steps = [int(m.group(1)) for m in listed if m]
    return bool(steps) and int(match.group(1)) < min(steps)


class StateFileIsADirectoryError(tf.errors.FailedPreconditionError):
    """model_dir holds a directory named `checkpoint`, where the state file belongs."""

    def __init__(self, state_file):
        self.state_file = state_file
        super().__init__(
            None, None,
            f"{state_file} is a directory, but that path is model_dir's checkpoint state file "
            f"(the file naming the latest {CHECKPOINT_BASENAME}-<step>, as TF1 wrote it); "
            "nothing was read or written. Rename or move that directory (or choose another "
            "model_dir).")

    def __reduce__(self):
        return type(self), (self.state_file,)


def read_state(model_dir):
    """The CheckpointState of `model_dir` (paths made absolute), or None when it holds no
    checkpoint. A missing or damaged state file beside checkpoints is recovered from.

    Raises:
      CorruptCheckpointStateError: the state file is missing or damaged and nothing can
        replace it.
      StateFileIsADirectoryError: the state file's path is a directory.
    """
    state_file = os.path.join(model_dir, STATE_FILENAME)
    if tf.io.gfile.isdir(state_file):
        raise StateFileIsADirectoryError(state_file)
    if tf.io.gfile.exists(state_file):
        with tf.io.gfile.GFile(state_file, "rb") as file:
            content = file.read()
        state = tf_training.CheckpointState()
        try:
            text_format.Parse(content.decode("utf-8"), state)
            problem = None if state.model_checkpoint_path else "it names no checkpoint"
        except (text_format.ParseError, UnicodeDecodeError) as error:
            problem = f"it cannot be parsed: {error}"
        if problem is None:
            return _absolute(state, model_dir)
    else:
        content, problem = None, _MISSING
    steps = checkpoint_steps(model_dir)
    if content is None and not steps:
        return None
    key = (state_file, content, steps)
    if key not in _recovered:
        _recovered[key] = _recover(model_dir, state_file, problem, steps)
    return _recovered[key]


def checkpoint_steps(model_dir) -> tuple:
    """The steps of the `model.ckpt-<step>` checkpoints whose index is in model_dir, newest
    first (none if model_dir is not a directory)."""
    if not tf.io.gfile.isdir(model_dir):
        return ()
    return tuple(sorted((int(m.group(1)) for m in map(_INDEX_FILE.match,
                                                       tf.io.gfile.listdir(model_dir)) if m),
                        reverse=True))


def latest_checkpoint(model_dir) -> str | None:
    """The checkpoint the state file of `model_dir` names as newest, or None if there is none.

    Only checkpoints inside model_dir are returned: a path of another directory in the state
    file (a model_dir copied with absolute paths in its state file) means the checkpoint of
    that file name in model_dir. A named checkpoint of which no file exists gives the newest
    one in model_dir, with a warning (the state file is re-read first: a trainer's retention
    may have moved it on). Unlike `tf.train.latest_checkpoint`, a named checkpoint with some
    of its files missing is still returned, so that restoring it reports the damage instead
    of silently starting afresh; a damaged state file is recovered from (see the module
    docstring).

    Raises:
      ForeignCheckpointError: the state file names a checkpoint of another directory that
        model_dir has no copy of.
    """
    model_dir = as_str(model_dir)
    named = None
    for _ in range(_STATE_READS):
        state = read_state(model_dir)
        if state is None:
            return None
        if state.model_checkpoint_path == named:
            break  # the state file did not move on: the named checkpoint is gone
        named = state.model_checkpoint_path
        latest = localize(named, model_dir)
        if _has_files(latest):
            return latest
    if latest != named and _has_files(named):
        raise ForeignCheckpointError(model_dir, named)
    steps = checkpoint_steps(model_dir)
    if not steps:
        return latest  # nothing else to go on from: reading it reports what is missing
    newest = os.path.join(model_dir, f"{CHECKPOINT_BASENAME}-{steps[0]}")
    logging.warning(
        "The checkpoint state file %s names %s, of which no file exists; going on from the "
        "newest checkpoint in %s, %s (the state file is rewritten at the next checkpoint).",
        os.path.join(model_dir, STATE_FILENAME), named, model_dir, newest)
    return newest


def warn_of_newer_checkpoints(checkpoint_path, model_dir) -> list:
    """Logs a warning when model_dir holds checkpoints of a higher step than
    `checkpoint_path` (the state file's latest, which training goes on from, as TF1 did);
    returns them, newest first."""
    match = _STEP.search(os.path.basename(checkpoint_path or ""))
    if match is None:
        return []
    model_dir = as_str(model_dir)
    newer = [os.path.join(model_dir, f"{CHECKPOINT_BASENAME}-{step}")
             for step in checkpoint_steps(model_dir) if step > int(match.group(1))]
    if newer:
        logging.warning(
            "The checkpoint state file %s names %s as the latest checkpoint, but %s holds "
            "newer ones: %s. Going on from %s, as the state file says; to go on from %s "
            "instead, delete the state file (the newest readable checkpoint is then used).",
            os.path.join(model_dir, STATE_FILENAME), checkpoint_path, model_dir,
            ", ".join(newer), checkpoint_path, newer[0])
    return newer


def previous_checkpoints(model_dir) -> list:
    """Older checkpoints listed in `model_dir`'s state file whose index exists, newest first.

    These are the candidates to fall back to when the latest checkpoint is damaged.
    """
    model_dir = as_str(model_dir)
    state = read_state(model_dir)
    if state is None:
        return []
    latest = localize(state.model_checkpoint_path, model_dir)
    older = [localize(p, model_dir) for p in reversed(state.all_model_checkpoint_paths)]
    return [p for p in older if p != latest and tf.io.gfile.exists(p + INDEX_SUFFIX)]


def resolve_checkpoint_path(ckpt_dir_or_path) -> str:
    """A checkpoint prefix for a directory (its latest checkpoint) or a prefix (unchanged).

    Raises:
      CheckpointNotFoundError: a directory without checkpoints, or a path where neither a
        checkpoint (index or data file) nor a directory exists.
    """
    path = as_str(ckpt_dir_or_path)
    if tf.io.gfile.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise CheckpointNotFoundError(
                path, f"Could not find trained model in model_dir: {path}.")
        return latest
    if _has_files(path):
        return path  # a checkpoint's files exist; reading it reports any damage
    if deleted_by_retention(path):
        raise CheckpointDeletedError([path], os.path.dirname(path) or ".")
    raise CheckpointNotFoundError(path, _not_found_message(path, os.path.dirname(path) or "."))


def _not_found_message(path, directory):
    if not tf.io.gfile.isdir(directory):
        there = f"the directory {directory} does not exist either"
    else:
        found = sorted(int(m.group(1)) for m in map(_INDEX_FILE.match,
                                                     tf.io.gfile.listdir(directory)) if m)
        there = (f"{directory} holds the checkpoints "
                 + ", ".join(f"{CHECKPOINT_BASENAME}-{step}" for step in found) if found
                 else f"{directory} holds no {CHECKPOINT_BASENAME}-<step> checkpoint")
    return (f"No checkpoint at {path}: there is no file {path}{INDEX_SUFFIX} and no directory "
            f"{path} ({there}). Pass an existing model_dir, or a checkpoint prefix such as "
            f"model_dir/{CHECKPOINT_BASENAME}-<step> (without the .index/.data suffix).")


def localize(path, model_dir):
    """The checkpoint a state-file path means inside model_dir: a path of another directory
    (model_dir copied or moved with absolute paths in its state file) gives the checkpoint of
    that file name in model_dir, so that nothing outside model_dir is read or deleted."""
    if not path or _same_directory(os.path.dirname(path), model_dir):
        return path
    return os.path.join(model_dir, os.path.basename(path))


def _same_directory(first, second):
    if "://" in first or "://" in second:
        return first.rstrip("/") == second.rstrip("/")
    return os.path.realpath(first or ".") == os.path.realpath(second or ".")


def _has_files(prefix):
    """Whether any file of a checkpoint prefix (index, data, meta) exists."""
    if tf.io.gfile.exists(prefix + INDEX_SUFFIX):
        return True
    directory, base = os.path.split(prefix)
    directory = directory or "."
    return tf.io.gfile.isdir(directory) and any(
        name.startswith(base + ".") for name in tf.io.gfile.listdir(directory))


def as_str(path):
    """A str path from str, bytes or os.PathLike."""
    path = os.fspath(path)
    return path.decode() if isinstance(path, bytes) else path


def _absolute(state, model_dir):
    """Joins the state's relative paths to model_dir. A relative path leading out of
    model_dir (`../model.ckpt-4`, written by tpu_estimator_compat before 2026-11 for a
    relative model_dir) means the checkpoint of that name inside model_dir."""
    def absolute(path):
        if os.path.isabs(path) or "://" in path:
            return path
        if os.path.normpath(path).split(os.sep)[0] == os.pardir:
            path = os.path.basename(path)
        return os.path.join(model_dir, path)
    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    paths = [absolute(p) for p in state.all_model_checkpoint_paths]
    del state.all_model_checkpoint_paths[:]
    state.all_model_checkpoint_paths.extend(paths)
    return state


def _recover(model_dir, state_file, problem, steps):
    """A state naming the newest readable checkpoint of model_dir (and the older ones);
    `steps`: the steps of the checkpoints whose index exists, newest first."""
    prefixes = [os.path.join(model_dir, f"{CHECKPOINT_BASENAME}-{step}") for step in steps]
    for index, prefix in enumerate(prefixes):
        if _readable(prefix):
            logging.warning(
                "The checkpoint state file %s is %s. Recovered: %s is the newest readable "
                "checkpoint in %s, so training, evaluation and export go on from it; the state "
                "file is rewritten at the next checkpoint.",
                state_file, _damage(problem), prefix, model_dir)
            return tf_training.CheckpointState(
                model_checkpoint_path=prefix,
                all_model_checkpoint_paths=prefixes[index:][::-1])
    raise CorruptCheckpointStateError(state_file, problem)


def _damage(problem):
    return "missing" if problem == _MISSING else f"damaged ({problem})"


def _readable(prefix):
    """Whether every tensor of a checkpoint can be read."""
    readable = glob_safe.readable_prefix(prefix)
    try:
        dtypes = tf.train.load_checkpoint(readable).get_variable_to_dtype_map()
        names = sorted(dtypes)
        tf.raw_ops.RestoreV2(prefix=readable, tensor_names=names,
                             shape_and_slices=[""] * len(names),
                             dtypes=[dtypes[name] for name in names])
    except (tf.errors.OpError, ValueError, IndexError):
        return False
    return True
