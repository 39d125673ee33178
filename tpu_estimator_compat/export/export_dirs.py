"""Where an export is written: `export_dir_base/<unix timestamp>/`, built in a temporary
directory of its own and renamed into place, so that a returned path always holds this call's
model and a half-written export is never visible.

The temporary directory, `temp-<timestamp>-<host>-<pid>-<start time>-<random>`, is unique to
the process and the call: two processes exporting into one export_dir_base in the same second
never share it (the original's `temp-<timestamp>` was shared, and one process's export could
end up under the other's path). The rename takes the first free timestamp from now on; when
another process takes that name first, the next one. Temporary directories left by processes
of this host that have ended (a killed export) are removed by the next export into the same
export_dir_base.
"""
import os
import re
import time
import uuid

import tensorflow as tf

from tpu_estimator_compat import log as logging
from tpu_estimator_compat.state import sharing

_TEMP = re.compile(rb"^temp-\d+-(?P<host>.+)-(?P<pid>\d+)-(?P<started>\d+)-[0-9a-f]{8}$")
_PUBLISH_ATTEMPTS = 100  # export directories other processes may take from under one rename


def temp_dir(export_dir_base) -> bytes:
    """A new temporary directory path (not created) unique to this process and call."""
    me = sharing.this_process()
    name = "temp-%d-%s-%d-%d-%s" % (time.time(), me["host"], me["pid"], me["started"] or 0,
                                    uuid.uuid4().hex[:8])
    return os.path.join(os.fsencode(export_dir_base), name.encode())


def publish(temp, export_dir_base) -> bytes:
    """Renames the finished `temp` to `export_dir_base/<timestamp>` (the first name from now
    on that no export holds) and returns that path."""
    base = os.fsencode(export_dir_base)
    timestamp = int(time.time())
    for _ in range(_PUBLISH_ATTEMPTS):
        final = os.path.join(base, b"%d" % timestamp)
        if not tf.io.gfile.exists(final):
            try:
                tf.io.gfile.rename(temp, final)
                return final
            except tf.errors.OpError:
                if not tf.io.gfile.exists(final):
                    raise  # not a name taken meanwhile
        timestamp += 1
    raise FileExistsError(
        f"Could not name the export in {os.fsdecode(base)}: every timestamp from "
        f"{timestamp - _PUBLISH_ATTEMPTS} to {timestamp - 1} is taken. Remove old exports or "
        "choose another export_dir_base.")


def remove_abandoned(export_dir_base):
    """Deletes the temporary directories of exports whose process (on this host) ended."""
    base = os.fsencode(export_dir_base)
    if not tf.io.gfile.isdir(base):
        return
    for name in tf.io.gfile.listdir(base):
        match = _TEMP.match(os.fsencode(name).rstrip(b"/"))
        if match is None:
            continue
        writer = {"host": match["host"].decode(), "pid": int(match["pid"]),
                  "started": int(match["started"])}
        mine = writer["host"] == sharing.this_process()["host"] and writer["started"]
        if mine and not sharing.alive_here(writer):
            path = os.path.join(base, match[0])
            logging.info("Removing %s, left by an export whose process (%d) has ended.",
                         os.fsdecode(path), writer["pid"])
            try:
                tf.io.gfile.rmtree(path)
            except tf.errors.NotFoundError:
                pass  # another export removed it first
