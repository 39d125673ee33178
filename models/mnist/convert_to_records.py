"""Writes MNIST-style TFRecords (`train.tfrecords`, `test.tfrecords`) for `mnist_tpu.py`.

Every record is a `tf.train.Example` with the features the MNIST TPU program parses:

  image_raw  bytes   the 28x28 image, 784 uint8 values, row-major
  label      int64   the digit, 0-9
  height, width, depth  int64  28, 28, 1 (as the classic MNIST converter wrote them)

Sources (nothing is downloaded, ever):

  digits  scikit-learn's bundled `load_digits()` (1797 images of 8x8, values 0-16), made to
          look like MNIST: scaled to 0-255, resized to 20x20 and centred in a 28x28 frame,
          as MNIST centres its 20x20 digits. Split with a fixed seed, stratified by label:
          1347 train / 450 test. This is the offline default.
  idx     the four MNIST files (`train-images-idx3-ubyte[.gz]`, `train-labels-idx1-ubyte[.gz]`,
          `t10k-images-idx3-ubyte[.gz]`, `t10k-labels-idx1-ubyte[.gz]`) in `--mnist_dir`.
  tfds    the `mnist` data set of `tensorflow_datasets` (imported only for this source),
          read from data already prepared in `--tfds_data_dir`; it is never downloaded.

Usage:

  python -m models.mnist.convert_to_records --output_dir=/tmp/mnist_data             # digits
  python -m models.mnist.convert_to_records --output_dir=/tmp/mnist_data --mnist_dir=DIR
  python -m models.mnist.convert_to_records --output_dir=/tmp/mnist_data --source=tfds
"""
import gzip
import os

import numpy as np

import tpu_estimator_compat.v1 as tf

TRAIN_FILE = "train.tfrecords"
VALIDATION_FILE = "validation.tfrecords"
TEST_FILE = "test.tfrecords"
IMAGE_SIZE = 28

IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_IDX_IMAGES_MAGIC = 2051
_IDX_LABELS_MAGIC = 2049

DIGITS_TEST_FRACTION = 0.25
DIGITS_SEED = 0
_DIGITS_BOX = 20  # MNIST digits fit a 20x20 box centred in the 28x28 image.


# -- Writing ---------------------------------------------------------------------------------

def _int64_feature(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))


def _bytes_feature(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def write_records(images, labels, path):
    """Writes `images` ([N, 28, 28] uint8) and `labels` ([N] ints) to the TFRecord `path`."""
    images = np.asarray(images)
    labels = np.asarray(labels)
    if images.dtype != np.uint8 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"images must be uint8 of shape [N, 28, 28]; got {images.dtype} "
                         f"{images.shape}")
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    tf.logging.info("Writing %d examples to %s", len(images), path)
    with tf.python_io.TFRecordWriter(path) as writer:
        for image, label in zip(images, labels):
            example = tf.train.Example(features=tf.train.Features(feature={
                "height": _int64_feature(IMAGE_SIZE),
                "width": _int64_feature(IMAGE_SIZE),
                "depth": _int64_feature(1),
                "label": _int64_feature(label),
                "image_raw": _bytes_feature(image.tobytes()),
            }))
            writer.write(example.SerializeToString())
    return path


def write_splits(splits, output_dir):
    """Writes {'train': (images, labels), 'test': ..., ['validation': ...]}; returns paths."""
    tf.gfile.MakeDirs(output_dir)
    files = {"train": TRAIN_FILE, "validation": VALIDATION_FILE, "test": TEST_FILE}
    return {name: write_records(images, labels, os.path.join(output_dir, files[name]))
            for name, (images, labels) in splits.items()}


def split_validation(splits, validation_size):
    """Moves the first `validation_size` training examples to a 'validation' split."""
    if not validation_size:
        return splits
    images, labels = splits["train"]
    if not 0 < validation_size < len(images):
        raise ValueError(f"validation_size must be between 0 and {len(images)}; got "
                         f"{validation_size}")
    splits = dict(splits)
    splits["validation"] = (images[:validation_size], labels[:validation_size])
    splits["train"] = (images[validation_size:], labels[validation_size:])
    return splits


# -- scikit-learn digits (the offline default) -------------------------------------------------

def _resize_matrix(size_in, size_out):
    """[size_out, size_in] bilinear interpolation weights (half-pixel centres, edges clamped)."""
    matrix = np.zeros((size_out, size_in), np.float64)
    centres = (np.arange(size_out) + 0.5) * size_in / size_out - 0.5
    centres = np.clip(centres, 0, size_in - 1)
    low = np.floor(centres).astype(int)
    high = np.minimum(low + 1, size_in - 1)
    frac = centres - low
    matrix[np.arange(size_out), low] += 1 - frac
    matrix[np.arange(size_out), high] += frac
    return matrix


def digits_to_mnist_images(images):
    """[N, 8, 8] values 0-16 -> [N, 28, 28] uint8 0-255: resized to 20x20, centred."""
    images = np.asarray(images, np.float64) * (255.0 / 16.0)
    resize = _resize_matrix(images.shape[1], _DIGITS_BOX)
    boxes = np.einsum("oi,nij,pj->nop", resize, images, resize)
    margin = (IMAGE_SIZE - _DIGITS_BOX) // 2
    framed = np.zeros((len(images), IMAGE_SIZE, IMAGE_SIZE), np.float64)
    framed[:, margin:margin + _DIGITS_BOX, margin:margin + _DIGITS_BOX] = boxes
    return np.clip(np.rint(framed), 0, 255).astype(np.uint8)


def load_digits_splits(test_fraction=DIGITS_TEST_FRACTION, seed=DIGITS_SEED):
    """scikit-learn's digits as MNIST-like {'train': (images, labels), 'test': ...}.

    The split is stratified by label and fixed by `seed`: the same files on every machine.
    """
    from sklearn import datasets  # pylint: disable=import-outside-toplevel

    digits = datasets.load_digits()
    images = digits_to_mnist_images(digits.images)
    labels = digits.target.astype(np.int64)
    rng = np.random.RandomState(seed)
    test_index = []
    for label in range(10):
        members = np.flatnonzero(labels == label)
        test_index.extend(rng.permutation(members)[:int(round(len(members) * test_fraction))])
    is_test = np.zeros(len(labels), bool)
    is_test[test_index] = True
    train_order = rng.permutation(np.flatnonzero(~is_test))
    test_order = np.flatnonzero(is_test)
    return {"train": (images[train_order], labels[train_order]),
            "test": (images[test_order], labels[test_order])}


def write_digits_records(output_dir):
    """Writes the digits' train.tfrecords and test.tfrecords to `output_dir`; returns paths."""
    return write_splits(load_digits_splits(), output_dir)


# -- MNIST idx files ---------------------------------------------------------------------------

def _find_idx_file(directory, name):
    for candidate in (name + ".gz", name, name.replace("-idx", ".idx")):
        path = os.path.join(directory, candidate)
        if tf.gfile.Exists(path):
            return path
    raise IOError(f"No {name}[.gz] in {directory}")


def read_idx(path, magic):
    """The array in an MNIST idx file (gzipped or not): images [N, rows, cols] uint8 for
    magic 2051, labels [N] int64 for magic 2049. Raises ValueError on another magic."""
    with tf.gfile.GFile(path, "rb") as raw:
        data = raw.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    found, count = np.frombuffer(data[:8], ">i4")
    if found != magic:
        raise ValueError(f"Invalid magic number {found} in MNIST file {path} (want {magic})")
    if magic == _IDX_LABELS_MAGIC:
        return np.frombuffer(data, np.uint8, count, offset=8).astype(np.int64)
    rows, cols = np.frombuffer(data[8:16], ">i4")
    return np.frombuffer(data, np.uint8, count * rows * cols, offset=16).reshape(
        count, rows, cols)


def has_idx_files(directory):
    """Whether `directory` holds the four MNIST idx files (gzipped or not)."""
    try:
        for names in IDX_FILES.values():
            for name in names:
                _find_idx_file(directory, name)
    except IOError:
        return False
    return True


def load_idx_splits(mnist_dir):
    """The MNIST idx files of `mnist_dir` as {'train': (images, labels), 'test': ...}."""
    splits = {}
    for split, (images_name, labels_name) in IDX_FILES.items():
        images = read_idx(_find_idx_file(mnist_dir, images_name), _IDX_IMAGES_MAGIC)
        labels = read_idx(_find_idx_file(mnist_dir, labels_name), _IDX_LABELS_MAGIC)
        if len(images) != len(labels):
            raise ValueError(f"{split}: {len(images)} images but {len(labels)} labels")
        splits[split] = (images, labels)
    return splits


# -- tensorflow_datasets -----------------------------------------------------------------------

def load_tfds_splits(name="mnist", data_dir=None):
    """`tensorflow_datasets`' MNIST (already prepared in `data_dir`) as numpy splits."""
    try:
        import tensorflow_datasets as tfds  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise ImportError("--source=tfds needs the tensorflow_datasets package "
                          "(pip install tensorflow-datasets)") from None
    splits = {}
    for split in ("train", "test"):
        dataset = tfds.load(name, split=split, data_dir=data_dir, download=False,
                            as_supervised=True, shuffle_files=False)
        images, labels = [], []
        for image, label in tfds.as_numpy(dataset):
            images.append(np.asarray(image, np.uint8).reshape(IMAGE_SIZE, IMAGE_SIZE))
            labels.append(int(label))
        splits[split] = (np.stack(images), np.asarray(labels, np.int64))
    return splits


# -- Command line ------------------------------------------------------------------------------

def convert(source, output_dir, mnist_dir=None, tfds_data_dir=None, validation_size=0):
    """Writes the TFRecords of `source` ('digits', 'idx' or 'tfds'); returns their paths."""
    if source == "digits":
        splits = load_digits_splits()
    elif source == "idx":
        if not mnist_dir:
            raise ValueError("--source=idx needs --mnist_dir")
        splits = load_idx_splits(mnist_dir)
    elif source == "tfds":
        splits = load_tfds_splits(data_dir=tfds_data_dir)
    else:
        raise ValueError(f"Unknown source {source!r}: use digits, idx or tfds")
    return write_splits(split_validation(splits, validation_size), output_dir)


def define_flags():
    tf.flags.DEFINE_string("output_dir", "/tmp/mnist_data",
                           "Directory to write train.tfrecords and test.tfrecords to.")
    tf.flags.DEFINE_enum("source", None, ["digits", "idx", "tfds"],
                         "Where the images come from. Default: idx if --mnist_dir is set, "
                         "else digits (scikit-learn's bundled 8x8 digits).")
    tf.flags.DEFINE_string("mnist_dir", None,
                           "Directory holding the four MNIST idx files (.gz or not).")
    tf.flags.DEFINE_string("tfds_data_dir", None,
                           "tensorflow_datasets data_dir holding a prepared `mnist`.")
    tf.flags.DEFINE_integer("validation_size", 0,
                            "Training examples to move into validation.tfrecords.")


def main(unused_argv):
    flags = tf.flags.FLAGS
    source = flags.source or ("idx" if flags.mnist_dir else "digits")
    paths = convert(source, flags.output_dir, mnist_dir=flags.mnist_dir,
                    tfds_data_dir=flags.tfds_data_dir, validation_size=flags.validation_size)
    for split, path in sorted(paths.items()):
        print(f"{split}: {path}")


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    define_flags()
    tf.app.run(main)
