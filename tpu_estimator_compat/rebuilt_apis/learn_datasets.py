"""`tf.contrib.learn.datasets.base.maybe_download`: the downloader that TF 1.x data-preparation
scripts call (google-research/uda's `preprocess.py` fetches CIFAR-10 and SVHN with it).

As in TF 1.x: `work_directory` is created if missing (any `tf.io.gfile` path), the file is
fetched only when `work_directory/filename` does not exist yet, a download that times out is
tried again (5 attempts in all, waiting 1, 2, 4 and 8 seconds), and a completed download prints
`Successfully downloaded FILENAME SIZE bytes.`
"""
import os
import tempfile
import time
import urllib.error
import urllib.request

import tensorflow as tf

ATTEMPTS = 5


def maybe_download(filename, work_directory, source_url):
    """Downloads `source_url` to `work_directory/filename` unless that file exists.

    Returns:
      The file's path, `os.path.join(work_directory, filename)`.

    Raises:
      urllib.error.URLError, OSError: the download failed (nothing is written).
    """
    tf.io.gfile.makedirs(work_directory)
    path = os.path.join(work_directory, filename)
    if not tf.io.gfile.exists(path):
        with tempfile.TemporaryDirectory() as directory:
            downloaded = os.path.join(directory, filename)
            _retrieve(source_url, downloaded)
            tf.io.gfile.copy(downloaded, path)
        print("Successfully downloaded", filename, tf.io.gfile.stat(path).length, "bytes.")
    return path


def _retrieve(url, target):
    for attempt in range(ATTEMPTS):
        try:
            urllib.request.urlretrieve(url, target)
            return
        except (TimeoutError, urllib.error.URLError) as error:
            timed_out = isinstance(getattr(error, "reason", error), TimeoutError)
            if not timed_out or attempt + 1 == ATTEMPTS:
                raise
            time.sleep(2 ** attempt)
