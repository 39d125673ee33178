"""The MNIST example (`models/mnist/`): its TFRecord converter, and the program itself run as
`python -m models.mnist.mnist_tpu` in fresh processes with a few training steps.

The two program runs (CPU, and a simulated 8-core TPU) start together in the background when
the first of their tests needs them, and run in parallel. The full-length run (>= 97 %
accuracy) is the README's main command, which CI runs; it is not repeated here.
"""
import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:  # `models/` is run from the repository root, not installed
    sys.path.insert(0, _REPO)

from models.mnist import convert_to_records  # noqa: E402  pylint: disable=wrong-import-position
_ACCURACY = re.compile(r"^Final eval accuracy: (\d\.\d+)$", re.M)
_PREDICTION = re.compile(r"^  image \d+: predicted (\d) \(.*%\), true label (\d)", re.M)
_SIMULATED_TPU_ENV = "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"
_TIMEOUT_SECS = 600


# -- The converter -------------------------------------------------------------------------

def _read_records(path):
    images, labels = [], []
    for record in tf.compat.v1.io.tf_record_iterator(path):
        feature = tf.train.Example.FromString(record).features.feature
        assert [feature[k].int64_list.value[0] for k in ("height", "width", "depth")] == [
            28, 28, 1]
        images.append(np.frombuffer(feature["image_raw"].bytes_list.value[0], np.uint8))
        labels.append(feature["label"].int64_list.value[0])
    return np.stack(images), np.asarray(labels)


def test_digits_records_are_mnist_like_and_deterministic(tmp_path):
    paths = convert_to_records.write_digits_records(str(tmp_path / "a"))
    train_images, train_labels = _read_records(paths["train"])
    test_images, test_labels = _read_records(paths["test"])
    assert train_images.shape == (1347, 784) and test_images.shape == (450, 784)
    assert set(train_labels) == set(test_labels) == set(range(10))
    assert 40 <= np.bincount(test_labels).min() <= np.bincount(test_labels).max() <= 50
    assert train_images.max() == 255
    frame = train_images.reshape(-1, 28, 28)
    assert not frame[:, :4].any() and not frame[:, -4:].any()  # centred, as MNIST is
    again = convert_to_records.write_digits_records(str(tmp_path / "b"))
    for split in ("train", "test"):
        with open(paths[split], "rb") as first, open(again[split], "rb") as second:
            assert first.read() == second.read()


def _write_idx(path, array, magic):
    header = np.asarray([magic, len(array)] + list(array.shape[1:]), ">i4").tobytes()
    with gzip.open(path, "wb") as out:
        out.write(header + array.astype(np.uint8).tobytes())


def test_idx_files_convert_with_a_validation_split(tmp_path):
    rng = np.random.RandomState(0)
    data = {"train": (rng.randint(0, 256, (6, 28, 28)), np.arange(6) % 10),
            "t10k": (rng.randint(0, 256, (3, 28, 28)), np.asarray([7, 2, 1]))}
    for prefix, (images, labels) in data.items():
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", images, 2051)
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels, 2049)
    assert convert_to_records.has_idx_files(str(tmp_path))

    paths = convert_to_records.convert("idx", str(tmp_path / "out"), mnist_dir=str(tmp_path),
                                       validation_size=2)

    images, labels = _read_records(paths["validation"])
    np.testing.assert_array_equal(images, data["train"][0][:2].reshape(2, 784))
    np.testing.assert_array_equal(labels, [0, 1])
    images, labels = _read_records(paths["train"])
    np.testing.assert_array_equal(images, data["train"][0][2:].reshape(4, 784))
    images, labels = _read_records(paths["test"])
    np.testing.assert_array_equal(images, data["t10k"][0].reshape(3, 784))
    np.testing.assert_array_equal(labels, [7, 2, 1])


def test_idx_files_with_a_wrong_magic_number_are_refused(tmp_path):
    _write_idx(tmp_path / "bad.gz", np.zeros((1, 28, 28)), 2049)
    with pytest.raises(ValueError, match="Invalid magic number 2049"):
        convert_to_records.read_idx(str(tmp_path / "bad.gz"), 2051)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_tfds_mnist_converts_without_download(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=4, policy=tfds.testing.MockPolicy.USE_CODE):
        paths = convert_to_records.convert("tfds", str(tmp_path / "out"),
                                           tfds_data_dir=str(tmp_path / "tfds"))
    for split in ("train", "test"):
        images, labels = _read_records(paths[split])
        assert images.shape == (4, 784)
        assert ((0 <= labels) & (labels < 10)).all()


# -- The program ---------------------------------------------------------------------------

class _Run:
    """`python -m models.mnist.mnist_tpu ARGS` started in the background in a fresh process."""

    def __init__(self, tmp_dir, args, env=None):
        self.model_dir = os.path.join(tmp_dir, "model")
        self.export_dir = os.path.join(tmp_dir, "export")
        command = [sys.executable, "-m", "models.mnist.mnist_tpu",
                   f"--model_dir={self.model_dir}", f"--export_dir={self.export_dir}", *args]
        full_env = {k: v for k, v in os.environ.items() if k != _SIMULATED_TPU_ENV}
        full_env.update(TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
        self._log_path = os.path.join(tmp_dir, "output.log")
        with open(self._log_path, "w", encoding="utf-8") as log:  # a file: no pipe to fill
            self._process = subprocess.Popen(  # pylint: disable=consider-using-with
                command, cwd=_REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
        self._output = None

    @property
    def output(self):
        if self._output is None:
            timed_out = ""
            try:
                self._process.wait(timeout=_TIMEOUT_SECS)
            except subprocess.TimeoutExpired:
                self.stop()
                timed_out = f"\n[killed after {_TIMEOUT_SECS} s]"
            with open(self._log_path, encoding="utf-8", errors="replace") as log:
                self._output = log.read() + timed_out
        return self._output

    @property
    def returncode(self):
        _ = self.output
        return self._process.returncode

    def check_succeeded(self):
        assert self.returncode == 0, self.output[-5000:]

    def stop(self):
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both program runs, started at once (they run in parallel)."""
    started = {
        "cpu": _Run(str(tmp_path_factory.mktemp("mnist_cpu")),
                    ["--train_steps=30", "--iterations=10", "--batch_size=32",
                     "--num_predictions=4"]),
        "tpu": _Run(str(tmp_path_factory.mktemp("mnist_tpu")),
                    ["--use_tpu", "--train_steps=16", "--iterations=8", "--batch_size=64",
                     "--num_shards=8", "--num_predictions=3", "--enable_predict"],
                    env={_SIMULATED_TPU_ENV: "8"}),
    }
    yield started
    for run in started.values():
        run.stop()


def _export_path(run):
    exports = [name for name in os.listdir(run.export_dir) if name.isdigit()]
    assert len(exports) == 1, os.listdir(run.export_dir)
    return os.path.join(run.export_dir, exports[0])


def _meta_graph_tags(export_path):
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_path, "saved_model.pb"), "rb") as proto:
        saved_model.ParseFromString(proto.read())
    return sorted(sorted(g.meta_info_def.tags) for g in saved_model.meta_graphs)


@pytest.mark.slow  # starts processes
def test_default_program_trains_evaluates_exports_and_predicts(runs):
    run = runs["cpu"]
    run.check_succeeded()
    accuracies = _ACCURACY.findall(run.output)
    assert len(accuracies) == 1, run.output[-3000:]
    assert 0.15 < float(accuracies[0]) <= 1.0  # 30 steps: well above chance (0.1)
    assert "Eval results: loss = " in run.output and "global_step = 30" in run.output
    # Offline data: scikit-learn's digits written under the model_dir.
    records = os.path.join(run.model_dir, "digits_tfrecords")
    assert sorted(os.listdir(records)) == ["test.tfrecords", "train.tfrecords"]
    assert os.path.exists(os.path.join(run.model_dir, "model.ckpt-30.index"))
    export_path = _export_path(run)
    assert os.path.exists(os.path.join(export_path, "variables", "variables.index"))
    # export_to_tpu=True (the default) adds the TPU MetaGraph without a TPU, as the original.
    assert _meta_graph_tags(export_path) == [["serve"], ["serve", "tpu"]]
    assert f"Exported SavedModel to {export_path}" in run.output
    predictions = _PREDICTION.findall(run.output)
    assert len(predictions) == 4, run.output[-3000:]


@pytest.mark.slow  # starts processes
def test_program_on_a_simulated_8_core_tpu(runs):
    run = runs["tpu"]
    run.check_succeeded()
    assert len(_ACCURACY.findall(run.output)) == 1, run.output[-3000:]
    assert "global_step = 16" in run.output
    export_path = _export_path(run)
    assert _meta_graph_tags(export_path) == [["serve"], ["serve", "tpu"]]
    assert len(_PREDICTION.findall(run.output)) == 3
    assert "TPUEstimator.predict() agrees with the SavedModel on 3/3 images" in run.output
