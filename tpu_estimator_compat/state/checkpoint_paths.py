"""Which checkpoint: the model_dir's `checkpoint` state file, and paths users give.

One resolution path for train, evaluate, predict, export, `get_variable_value` and warm
starting, with the same named errors:

* `latest_checkpoint(model_dir)`: the checkpoint the state file names. A state file that is
  torn or garbled, names no checkpoint, or is missing beside `model.ckpt-<step>` files, is
  not taken for "no checkpoint" (which would restart training from step 0 and overwrite
  `model.ckpt-0`...): the newest readable `model.ckpt-<step>` in model_dir takes its place,
  with a warning in the log (the file is rewritten at the next save); if none is readable,
  `CorruptCheckpointStateError`.
* `resolve_checkpoint_path(path)`: a directory gives its latest checkpoint, a prefix itself;
  a path where nothing exists raises `CheckpointNotFoundError`, listing what is there.

Damaged checkpoint files are reported when read (`checkpoints.CorruptCheckpointError`).
"""
import os
import re

import tensorflow as tf
from absl import logging
from google.protobuf import text_format
from tensorflow.python.training import checkpoint_state_pb2

CHECKPOINT_BASENAME = "model.ckpt"
STATE_FILENAME = "checkpoint"
INDEX_SUFFIX = ".index"
_INDEX_FILE = re.compile(re.escape(CHECKPOINT_BASENAME) + r"-(\d+)" + re.escape(INDEX_SUFFIX)
                         + "$")
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


def read_state(model_dir):
    """The CheckpointState of `model_dir` (paths made absolute), or None when it holds no
    checkpoint. A missing or damaged state file beside checkpoints is recovered from.

    Raises:
      CorruptCheckpointStateError: the state file is missing or damaged and nothing can
        replace it.
    """
    state_file = os.path.join(model_dir, STATE_FILENAME)
    if tf.io.gfile.exists(state_file):
        with tf.io.gfile.GFile(state_file, "rb") as file:
            content = file.read()
        state = checkpoint_state_pb2.CheckpointState()
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

    Unlike `tf.train.latest_checkpoint`, a named checkpoint whose files are missing is still
    returned, so that restoring it reports the damage instead of silently starting afresh;
    a damaged state file is recovered from (see the module docstring).
    """
    model_dir = as_str(model_dir)
    state = read_state(model_dir)
    if state is None:
        return None
    return localize(state.model_checkpoint_path, model_dir)


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
    directory, base = os.path.split(path)
    directory = directory or "."
    if tf.io.gfile.isdir(directory) and any(
            name.startswith(base + ".") for name in tf.io.gfile.listdir(directory)):
        return path  # a checkpoint's files exist; reading it reports any damage
    raise CheckpointNotFoundError(path, _not_found_message(path, directory))


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
    """Maps a state-file path into model_dir when the directory has been moved since."""
    if not path or tf.io.gfile.exists(path + INDEX_SUFFIX):
        return path
    local = os.path.join(model_dir, os.path.basename(path))
    return local if tf.io.gfile.exists(local + INDEX_SUFFIX) else path


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
            return checkpoint_state_pb2.CheckpointState(
                model_checkpoint_path=prefix,
                all_model_checkpoint_paths=prefixes[index:][::-1])
    raise CorruptCheckpointStateError(state_file, problem)


def _damage(problem):
    return "missing" if problem == _MISSING else f"damaged ({problem})"


def _readable(prefix):
    """Whether every tensor of a checkpoint can be read."""
    try:
        dtypes = tf.train.load_checkpoint(prefix).get_variable_to_dtype_map()
        names = sorted(dtypes)
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=names,
                             shape_and_slices=[""] * len(names),
                             dtypes=[dtypes[name] for name in names])
    except (tf.errors.OpError, ValueError, IndexError):
        return False
    return True
