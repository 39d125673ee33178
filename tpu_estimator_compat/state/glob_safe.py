"""Checkpoint prefixes TensorFlow's readers open, whatever their directory is called.

TensorFlow's checkpoint readers (`tf.train.load_checkpoint`, RestoreV2, `Saver.restore`)
look for a checkpoint's files with the prefix as a glob pattern, then open them by the literal
name: in a directory whose name holds glob characters (`sweep/run[1]`, `a\\b`), a healthy
checkpoint is "not found" either way. `readable_prefix` gives such a prefix through a
symbolic link to its directory, made once per directory in a temporary directory and removed
when the process exits. Local paths only (a `scheme://` path is returned unchanged).
"""
import atexit
import os
import re
import shutil
import tempfile

_GLOB_CHARACTERS = re.compile(r"[][*?\\]")
_links = {}  # real directory -> its link


def readable_prefix(prefix: str) -> str:
    """`prefix`, or the same checkpoint through a link when its directory's name holds glob
    characters."""
    directory, base = os.path.split(prefix)
    if "://" in prefix or not _GLOB_CHARACTERS.search(directory):
        return prefix
    real = os.path.abspath(directory)
    if real not in _links:
        if not _links:
            atexit.register(_remove_links)
        holder = tempfile.mkdtemp(prefix="tpu_estimator_compat_checkpoints_")
        _links[real] = os.path.join(holder, "model_dir")
        os.symlink(real, _links[real])
    return os.path.join(_links[real], base)


def _remove_links():
    for link in _links.values():
        shutil.rmtree(os.path.dirname(link), ignore_errors=True)
