"""`tf.contrib.learn.datasets.base.maybe_download` (the downloader of TF 1.x data-preparation
scripts such as google-research/uda's `preprocess.py`); no network: file:// URLs."""
import os
import urllib.error

import pytest

import tpu_estimator_compat.v1 as tf
from tpu_estimator_compat.rebuilt_apis import learn_datasets as _learn_datasets


def _source(tmp_path, data=b"cifar bytes"):
    source = tmp_path / "server" / "cifar-10-python.tar.gz"
    source.parent.mkdir()
    source.write_bytes(data)
    return source.as_uri()


def test_downloads_into_a_new_directory_once(tmp_path, capsys):
    url = _source(tmp_path)
    work = str(tmp_path / "data" / "download")
    path = tf.contrib.learn.datasets.base.maybe_download("cifar.tar.gz", work, url)
    assert path == os.path.join(work, "cifar.tar.gz")
    with open(path, "rb") as f:
        assert f.read() == b"cifar bytes"
    assert capsys.readouterr().out == "Successfully downloaded cifar.tar.gz 11 bytes.\n"
    # Present already: not fetched again (the source is gone), nothing printed.
    os.remove(url[len("file://"):])
    from tpu_estimator_compat.v1.contrib.learn.datasets import base
    assert base.maybe_download("cifar.tar.gz", work, url) == path
    assert capsys.readouterr().out == ""


def test_a_failed_download_raises_and_writes_nothing(tmp_path):
    work = str(tmp_path / "download")
    with pytest.raises(urllib.error.URLError):
        tf.contrib.learn.datasets.base.maybe_download(
            "x.bin", work, (tmp_path / "missing.bin").as_uri())
    assert os.listdir(work) == []


def test_timeouts_are_tried_again_with_growing_waits(tmp_path, monkeypatch):
    url, real_retrieve = _source(tmp_path), _learn_datasets.urllib.request.urlretrieve
    calls, waits = [], []

    def flaky(source, target):
        calls.append(source)
        if len(calls) < 3:
            raise urllib.error.URLError(TimeoutError("timed out"))
        return real_retrieve(source, target)

    monkeypatch.setattr(_learn_datasets.urllib.request, "urlretrieve", flaky)
    monkeypatch.setattr(_learn_datasets.time, "sleep", waits.append)
    path = _learn_datasets.maybe_download("c.tgz", str(tmp_path / "d"), url)
    assert os.path.getsize(path) == 11 and len(calls) == 3 and waits == [1, 2]
    calls.clear()

    def down(source, target):
        calls.append(source)
        raise TimeoutError("timed out")

    monkeypatch.setattr(_learn_datasets.urllib.request, "urlretrieve", down)
    with pytest.raises(TimeoutError):
        _learn_datasets.maybe_download("e.tgz", str(tmp_path / "d"), url)
    assert len(calls) == _learn_datasets.ATTEMPTS


def test_the_rest_of_contrib_learn_names_what_to_use_instead():
    with pytest.raises(AttributeError, match=r"has no attribute 'RunConfig'\. "
                       r"tpu_estimator_compat provides tf\.contrib\.learn\.datasets\.base\."
                       r"maybe_download only\. Instead of the rest of tf\.contrib\.learn, use "
                       r"tf\.estimator \(Estimator, RunConfig"):
        tf.contrib.learn.RunConfig  # noqa: B018
