"""Tiny offline inputs in the formats real TPUEstimator programs read.

Everything is written with numpy and the standard library plus `tf.train.Example` protos from
real TensorFlow (no graph, no model), seeded, and small enough for a few CPU steps.
"""
import json
import os

import numpy as np

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "far", "big", "small", "red",
         "blue", "tree", "house", "car", "fast", "slow", "day", "night"]
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _feature(value):
    import tensorflow as tf  # real TensorFlow: only its protos are used

    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (bytes, str)):
        data = [v if isinstance(v, bytes) else v.encode() for v in value]
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=data))
    value = np.asarray(value)
    if value.dtype.kind in "iub":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value.reshape(-1).tolist()))
    if value.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=value.reshape(-1).tolist()))
    raise TypeError("unsupported feature value %r" % (value,))


def write_tfrecord(path, examples):
    """Writes dicts of name -> array (int64, float or bytes) as `tf.train.Example`s."""
    import tensorflow as tf

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for example in examples:
            features = tf.train.Features(
                feature={name: _feature(value) for name, value in example.items()})
            writer.write(tf.train.Example(features=features).SerializeToString())
    return path


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    return path


def write_vocab(path):
    """A WordPiece vocabulary: the special tokens, then WORDS. Returns its size."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tokens = SPECIAL_TOKENS + WORDS
    with open(path, "w") as f:
        f.write("\n".join(tokens) + "\n")
    return len(tokens)


def sentence(rng, length):
    return " ".join(rng.choice(WORDS, size=length))


def masked_lm_examples(rng, count, seq_length, max_predictions, vocab_size):
    """BERT/ALBERT pre-training features (create_pretraining_data.py's layout)."""
    examples = []
    for _ in range(count):
        used = int(rng.randint(seq_length // 2, seq_length + 1))
        input_ids = np.zeros(seq_length, np.int64)
        input_ids[:used] = rng.randint(len(SPECIAL_TOKENS), vocab_size, size=used)
        input_mask = (np.arange(seq_length) < used).astype(np.int64)
        segment_ids = ((np.arange(seq_length) >= used // 2) & (input_mask == 1)).astype(np.int64)
        n_pred = min(max_predictions, max(1, used // 4))
        positions = np.zeros(max_predictions, np.int64)
        positions[:n_pred] = np.sort(rng.choice(np.arange(1, used), n_pred, replace=False))
        ids = np.zeros(max_predictions, np.int64)
        ids[:n_pred] = input_ids[positions[:n_pred]]
        weights = np.zeros(max_predictions, np.float32)
        weights[:n_pred] = 1.0
        examples.append({
            "input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
            "masked_lm_positions": positions, "masked_lm_ids": ids,
            "masked_lm_weights": weights, "next_sentence_labels": [int(rng.randint(2))]})
    return examples


def bert_config(vocab_size, hidden=16, layers=1, heads=2, seq=64, **extra):
    config = {
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "intermediate_size": 2 * hidden, "vocab_size": vocab_size,
        "max_position_embeddings": seq, "type_vocab_size": 2, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02}
    config.update(extra)
    return config


def mnist_records(rng, count):
    """MNIST as mnist_tpu.py reads it: raw uint8 28x28 bytes and an int64 label."""
    labels = rng.randint(10, size=count)
    images = rng.randint(0, 64, size=(count, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):  # a learnable signal: a bright row per class
        images[i, 2 + 2 * label, :] = 255
    return [{"image_raw": [img.tobytes()], "label": [int(lab)]}
            for img, lab in zip(images, labels)]


def tfds_cifar10(data_dir, rng, train=16, test=8):
    """Prepares TFDS's real `cifar10` builder in `data_dir` from fake CIFAR binary batches.

    The builder's download is redirected to a directory of generated `*.bin` files in the CIFAR
    layout (1 label byte + 3072 pixel bytes per record), so a program calling
    `tfds.builder('cifar10', data_dir=...).download_and_prepare()` finds it prepared, offline.
    """
    from unittest import mock

    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    source = os.path.join(data_dir, "fake_source")
    batches = os.path.join(source, "cifar-10-batches-bin")
    os.makedirs(batches, exist_ok=True)
    with open(os.path.join(batches, "batches.meta.txt"), "w") as f:
        f.write("\n".join("class%d" % i for i in range(10)) + "\n")
    names = ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]
    for name in names:
        count = test if name.startswith("test") else max(1, train // 5)
        labels = rng.randint(10, size=(count, 1)).astype(np.uint8)
        pixels = rng.randint(256, size=(count, 3072)).astype(np.uint8)
        with open(os.path.join(batches, name), "wb") as f:
            f.write(np.concatenate([labels, pixels], axis=1).tobytes())
    builder = tfds.builder("cifar10", data_dir=data_dir)
    with mock.patch.object(tfds.download.DownloadManager, "download_and_extract",
                           lambda self, url: source):
        builder.download_and_prepare()
    return builder.info.splits["train"].num_examples


def tfds_mnist(data_dir, rng, train=64, test=16):
    """Prepares TFDS's real `mnist` builder in `data_dir` from fake IDX files (MNIST's
    layout: a 16-byte header then 28x28 uint8 images; an 8-byte header then uint8 labels),
    `train` and `test` examples, offline, as `tfds_cifar10` does for CIFAR-10."""
    from unittest import mock

    import tensorflow_datasets as tfds
    from tensorflow_datasets.image_classification import mnist

    tfds.disable_progress_bar()
    source = os.path.join(data_dir, "fake_source")
    os.makedirs(source, exist_ok=True)
    files = {}
    for split, count in (("train", train), ("test", test)):
        labels = rng.randint(10, size=count).astype(np.uint8)
        images = rng.randint(0, 64, size=(count, 28, 28)).astype(np.uint8)
        for i, label in enumerate(labels):  # a learnable signal: a bright row per class
            images[i, 2 + 2 * label, :] = 255
        files[split + "_data"] = os.path.join(source, split + "-images")
        files[split + "_labels"] = os.path.join(source, split + "-labels")
        with open(files[split + "_data"], "wb") as f:
            f.write(bytes(16) + images.tobytes())
        with open(files[split + "_labels"], "wb") as f:
            f.write(bytes(8) + labels.tobytes())
    builder = tfds.builder("mnist", data_dir=data_dir)
    with mock.patch.object(tfds.download.DownloadManager, "download_and_extract",
                           lambda self, urls: {k: files[k] for k in urls}), \
            mock.patch.object(mnist, "_TRAIN_EXAMPLES", train), \
            mock.patch.object(mnist, "_TEST_EXAMPLES", test):
        builder.download_and_prepare()
    return builder.info.splits["train"].num_examples


def tfds_iris(data_dir, rng, count=30):
    """Prepares TFDS's real `iris` builder in `data_dir` from a fake iris.data (UCI's layout:
    four measurements and the species name per line), offline."""
    import pathlib
    from unittest import mock

    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    source = pathlib.Path(data_dir) / "fake_source"
    source.mkdir(parents=True, exist_ok=True)
    names = ("Iris-setosa", "Iris-versicolor", "Iris-virginica")
    centres = [[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]]
    with open(source / "iris.data", "w") as f:
        for species in rng.randint(3, size=count):
            values = [round(c + rng.normal(0, 0.2), 1) for c in centres[species]]
            f.write(",".join(str(v) for v in values) + "," + names[species] + "\n")
    builder = tfds.builder("iris", data_dir=data_dir)
    with mock.patch.object(tfds.download.DownloadManager, "download_and_extract",
                           lambda self, url: source):
        builder.download_and_prepare()
    return builder.info.splits["train"].num_examples


def tfds_imagenet2012(data_dir, rng, count=8, size=40):
    """Prepares TFDS's real `imagenet2012` builder in `data_dir` from a fake manual download:
    ILSVRC2012_img_train.tar holding one synset's tar (n01440764, the first class) of `count`
    random `size`x`size` JPEGs, and ILSVRC2012_img_val.tar of two (the builder reads it
    whether or not it is there), offline."""
    import io
    import tarfile

    import tensorflow as tf  # real TensorFlow, eagerly, to encode the JPEGs
    import tensorflow_datasets as tfds

    tfds.disable_progress_bar()
    manual = os.path.join(data_dir, "manual")
    os.makedirs(manual, exist_ok=True)

    def tar_of(members):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    def jpeg():
        pixels = rng.randint(256, size=(size, size, 3)).astype(np.uint8)
        return tf.io.encode_jpeg(pixels).numpy()

    synset = tar_of([("n01440764_%d.JPEG" % i, jpeg()) for i in range(count)])
    for name, members in (
            ("ILSVRC2012_img_train.tar", [("n01440764.tar", synset)]),
            ("ILSVRC2012_img_val.tar", [("ILSVRC2012_val_%08d.JPEG" % i, jpeg())
                                        for i in (1, 2)])):
        with open(os.path.join(manual, name), "wb") as f:
            f.write(tar_of(members))
    builder = tfds.builder("imagenet2012", data_dir=data_dir)
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=manual))
    return builder.info.splits["train"].num_examples
