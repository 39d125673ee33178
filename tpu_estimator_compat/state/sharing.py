"""A model_dir shared between processes: readers beside one trainer.

* A reader (`evaluate`/`predict`/`export_saved_model`/`get_variable_value` of the latest
  checkpoint in another process, as the `evaluator` task of train_and_evaluate) reads
  checkpoints that the trainer's retention (`keep_checkpoint_max`) deletes at any moment.
  `ChosenCheckpoint.read`/`load` (`load_latest`) read again from the newest checkpoint when
  the chosen one vanished while being read, and raise `CheckpointDeletedError` ("deleted
  while we read it: deleted by retention") when that keeps happening.
* A train() that fails releases the lock without hiding its error (`training_in`).
* Two trainers writing one model_dir delete each other's checkpoints and temporary files.
  `TrainerLock` (a file `model_dir/.trainer_lock` naming the process: host, pid, start time)
  makes a second trainer fail at its start with `SecondTrainerError`, and a trainer whose
  model_dir was taken over (a second trainer on another host, which cannot see whether the
  first is alive) fails at its next save. A lock left by a killed or crashed process is stale
  and taken over with a log line: a crash never prevents the next run.
"""
import contextlib
import json
import os
import socket
import uuid

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.state import checkpoint_paths
from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state.checkpoint_paths import (  # pylint: disable=unused-import
    CheckpointDeletedError, CheckpointNotFoundError)

LOCK_FILENAME = ".trainer_lock"
_ATTEMPTS = 3  # checkpoints that may vanish under one read before giving up


class ChosenCheckpoint:
    """The checkpoint an evaluate/predict/export/`get_variable_value` call reads, chosen
    before its model is traced.

    Args:
      path: a checkpoint prefix, or None (nothing to restore).
      follow_latest_of: the model_dir whose newest checkpoint replaces `path` when `path`
        is deleted before it is read (the call asked for the latest checkpoint); None when
        the user named `path` itself.
    """

    def __init__(self, path, follow_latest_of=None):
        self.path = path
        self._model_dir = follow_latest_of
        self._existed = _index_exists(path)

    def read(self, read_fn):
        """Calls `read_fn(path)`; returns the path it read (a newer one if `path` vanished).

        Raises:
          CheckpointDeletedError: the checkpoint vanished and no newer one could be read in
            its place (after `_ATTEMPTS` vanished checkpoints when following the latest).
        """
        return self.load(read_fn)[0]

    def load(self, read_fn):
        """Calls `read_fn(path)` as `read` does; returns `(the path read, its result)`."""
        vanished = []
        path, existed = self.path, self._existed
        while True:
            try:
                return path, read_fn(path)
            except (CheckpointNotFoundError, tf.errors.NotFoundError,
                    tf.errors.DataLossError) as error:
                deleted = path is not None and (
                    existed and not _index_exists(path)
                    or checkpoint_paths.deleted_by_retention(path))
                if not deleted:
                    raise  # missing from the start, or damaged: reported as such
                vanished.append(path)
                newer = (checkpoint_paths.latest_checkpoint(self._model_dir)
                         if self._model_dir is not None else None)
                if newer is None or newer in vanished or len(vanished) >= _ATTEMPTS:
                    raise CheckpointDeletedError(vanished, self._model_dir) from error
                logging.warning("Checkpoint %s was deleted while we read it (the trainer's "
                                "keep_checkpoint_max retention); restoring the newest "
                                "checkpoint, %s, instead.", path, newer)
                path, existed = newer, _index_exists(newer)


def load_latest(model_dir, read_fn):
    """`read_fn(model_dir's latest checkpoint)`, on the next newest one when a trainer's
    retention deletes it meanwhile (`get_variable_value`, export).

    Raises:
      ValueError: model_dir holds no checkpoint.
      CheckpointDeletedError: checkpoints kept vanishing (see `ChosenCheckpoint.read`).
    """
    chosen = choose_checkpoint(None, model_dir)
    if chosen.path is None:
        raise ValueError(f"Could not find trained model in model_dir: {model_dir}.")
    return chosen.load(read_fn)[1]


def choose_checkpoint(checkpoint_path, model_dir) -> ChosenCheckpoint:
    """What an evaluate/predict call restores: `checkpoint_path` (a prefix; a directory gives
    its newest checkpoint, followed), else model_dir's newest checkpoint (followed)."""
    if not checkpoint_path:
        return ChosenCheckpoint(checkpoint_paths.latest_checkpoint(model_dir), model_dir)
    path = checkpoint_paths.as_str(checkpoint_path)
    return ChosenCheckpoint(checkpoint_paths.resolve_checkpoint_path(path),
                            follow_latest_of=path if tf.io.gfile.isdir(path) else None)


def _index_exists(path):
    return path is not None and tf.io.gfile.exists(path + checkpoint_paths.INDEX_SUFFIX)


class SecondTrainerError(RuntimeError):
    """Another process is training in the same model_dir."""

    def __init__(self, model_dir, owner, taken_over=False):
        self.model_dir = model_dir
        self.owner = dict(owner)
        self._taken_over = taken_over
        who = f"process {owner.get('pid')} on host {owner.get('host')}"
        if taken_over:
            what = (f"Another trainer ({who}) took over model_dir {model_dir} while this one "
                    "was training; this one stops before its next checkpoint")
        else:
            what = (f"Another trainer ({who}) is training in model_dir {model_dir}; nothing "
                    "was run or written")
        super().__init__(
            f"{what}. Two trainers in one model_dir overwrite and delete each other's "
            "checkpoints. Stop one of them, or give each its own model_dir; a process that "
            "only evaluates or predicts may share the model_dir (it writes no checkpoints). "
            f"If that trainer is gone, delete {os.path.join(model_dir, LOCK_FILENAME)}.")

    def __reduce__(self):
        return type(self), (self.model_dir, self.owner, self._taken_over)


def latest_step(model_dir):
    """The global step of model_dir's newest checkpoint, or None (no checkpoint, or one
    deleted while read: a trainer is writing model_dir, which `training_in` reports)."""
    latest = checkpoint_paths.latest_checkpoint(model_dir)
    try:
        return int(checkpoints.load_variable(latest, "global_step")) if latest else None
    except (CheckpointNotFoundError, checkpoints.CorruptCheckpointError):
        if _index_exists(latest):
            raise
        return None


@contextlib.contextmanager
def training_in(model_dir, is_chief):
    """Holds model_dir's `TrainerLock` during a train() call of the chief (yields it; None on
    other workers, which write no checkpoints).

    Raises:
      CheckpointWriteError: model_dir cannot be created or written.
      SecondTrainerError: another trainer holds model_dir.
    """
    if not is_chief:
        yield None
        return
    checkpoints.require_writable(model_dir)
    lock = TrainerLock(model_dir)
    lock.acquire()
    try:
        yield lock
    except BaseException:
        _release_after_failure(lock)
        raise
    lock.release()


def _release_after_failure(lock):
    """Releases the lock of a train() call that failed, without hiding why it failed (a disk
    turned read-only fails both the save and the release): a failed release is logged."""
    try:
        lock.release()
    except (tf.errors.OpError, OSError) as error:
        logging.warning("Could not remove the trainer lock %s (%s); a later train() of this "
                        "process, or the next trainer once it has ended, takes it over.",
                        lock.path, error)


class TrainerLock:
    """The claim of one train() call on a model_dir; see the module docstring.

    `acquire()` before writing anything, `check()` before each save, `release()` at the end.
    """

    def __init__(self, model_dir):
        self._model_dir = checkpoint_paths.as_str(model_dir)
        self._file = os.path.join(self._model_dir, LOCK_FILENAME)
        self._me = {**this_process(), "token": uuid.uuid4().hex}

    def acquire(self):
        """Claims model_dir.

        Raises:
          SecondTrainerError: a live process on this host holds it.
        """
        owner = self._read()
        if owner is not None and not self._is_mine(owner):
            if alive_here(owner):
                raise SecondTrainerError(self._model_dir, owner)
            if owner.get("host") != self._me["host"]:
                logging.warning(
                    "model_dir %s was claimed by a trainer on host %s (process %s); if it is "
                    "still running it stops at its next checkpoint, as this trainer takes "
                    "over.", self._model_dir, owner.get("host"), owner.get("pid"))
            else:
                logging.info("Taking over model_dir %s from process %s, which has ended.",
                             self._model_dir, owner.get("pid"))
        self._write()
        owner = self._read()  # two trainers starting at once: one rename wins
        if owner is not None and owner["token"] != self._me["token"] and alive_here(owner):
            raise SecondTrainerError(self._model_dir, owner)

    def check(self):
        """Raises SecondTrainerError if another trainer took model_dir over."""
        owner = self._read()
        if owner is None:
            self._write()  # removed by hand: claim it again
        elif owner["token"] != self._me["token"] and not self._is_mine(owner):
            raise SecondTrainerError(self._model_dir, owner, taken_over=True)

    @property
    def path(self):
        return self._file

    def release(self):
        owner = self._read()
        if owner is not None and owner["token"] == self._me["token"]:
            tf.io.gfile.remove(self._file)

    def _is_mine(self, owner):
        return all(owner.get(key) == self._me[key] for key in ("host", "pid", "started"))

    def _read(self):
        try:
            with tf.io.gfile.GFile(self._file, "r") as file:
                owner = json.loads(file.read())
            return owner if isinstance(owner, dict) and "token" in owner else None
        except (tf.errors.NotFoundError, ValueError):
            return None

    def _write(self):
        temp = f"{self._file}_temp_{self._me['token']}"
        with tf.io.gfile.GFile(temp, "w") as file:
            file.write(json.dumps(self._me))
        tf.io.gfile.rename(temp, self._file, overwrite=True)


def this_process() -> dict:
    """`{"host", "pid", "started"}` of this process: what `alive_here` recognises."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _start_time(os.getpid())}


def alive_here(owner):
    """Whether `owner` (`this_process()` of some process: a lock's owner, an export's
    writer) is a running process on this host (False when unknown)."""
    if owner.get("host") != socket.gethostname() or not isinstance(owner.get("pid"), int):
        return False
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    return _start_time(owner["pid"]) == owner.get("started")  # not a reused pid, no zombie


def _start_time(pid):
    """The process's start time in clock ticks since boot (Linux), None where unknown or for
    a zombie (a process killed but not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])
