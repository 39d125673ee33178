"""MNIST on TPUEstimator: the example program of the Cloud TPU TPUEstimator guides.

A TensorFlow 1 program; its only TensorFlow import is `import tpu_estimator_compat.v1 as tf`.
It trains a small CNN (conv 5x5x32 + pool, conv 5x5x64 + pool, dense 1024, dropout 0.4,
dense 10) with TPUEstimator on TFRecords of `image_raw` (784 uint8 bytes) and `label` (int64),
evaluates it on the whole test set with `tf.metrics.accuracy` in a host-side metric_fn
(printed as `Final eval accuracy: 0.xxxx`), exports a SavedModel and prints the SavedModel's
predictions for a few test images next to their true labels (`--enable_predict` also runs
`TPUEstimator.predict()` on them and compares).

Data (`--data_dir`): a directory with `train.tfrecords` and `test.tfrecords` (written by
`convert_to_records.py`), or one with the four MNIST idx files, converted on the fly. Without
`--data_dir` the program runs offline on scikit-learn's bundled 8x8 digits, made MNIST-like
(28x28 uint8) and written as TFRecords under `<model_dir>/digits_tfrecords`.

  python -m models.mnist.mnist_tpu                    # CPU, offline digits: accuracy ~0.99
  TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=8 python -m models.mnist.mnist_tpu --use_tpu
  python -m models.mnist.mnist_tpu --use_tpu --tpu=my-tpu --data_dir=gs://b/mnist \\
      --model_dir=gs://b/mnist_model --batch_size=1024 --train_steps=2000
"""
import os
import tempfile
import time

import numpy as np

import tpu_estimator_compat.v1 as tf
from models.mnist import convert_to_records

# Cloud TPU cluster resolution.
tf.flags.DEFINE_string(
    "tpu", None,
    "The Cloud TPU to use for training: the name used when creating it, or a grpc:// "
    "address.")
tf.flags.DEFINE_string(
    "tpu_zone", None,
    "[Optional] GCE zone of the Cloud TPU. If not given, it is detected from metadata.")
tf.flags.DEFINE_string(
    "gcp_project", None,
    "[Optional] Project of the Cloud TPU. If not given, it is detected from metadata.")
tf.flags.DEFINE_string(
    "master", None,
    "[Optional] TensorFlow master address, used instead of --tpu (e.g. '' for local).")

# Model and data.
tf.flags.DEFINE_bool("use_tpu", False, "Use TPUs rather than plain CPUs/GPUs.")
tf.flags.DEFINE_string(
    "data_dir", None,
    "Directory with train.tfrecords and test.tfrecords (or the MNIST idx files). Default: "
    "scikit-learn's bundled digits, written as TFRecords under the model_dir; no download.")
tf.flags.DEFINE_string(
    "model_dir", None,
    "Estimator model_dir (checkpoints, summaries). Default: a new temporary directory.")
tf.flags.DEFINE_string(
    "export_dir", None, "Where to export the SavedModel. Default: <model_dir>/export.")
tf.flags.DEFINE_integer(
    "batch_size", 64,
    "Global batch size for training, evaluation and prediction (divisible by the number of "
    "TPU cores when --use_tpu).")
tf.flags.DEFINE_integer("train_steps", 400, "Total number of training steps.")
tf.flags.DEFINE_integer(
    "eval_steps", 0,
    "Number of evaluation batches; 0 evaluates the whole test set once.")
tf.flags.DEFINE_float("learning_rate", 0.05, "Initial learning rate (SGD with momentum 0.9).")
tf.flags.DEFINE_integer(
    "iterations", 50, "Number of iterations per TPU training loop (steps between host "
    "round-trips).")
tf.flags.DEFINE_integer("num_shards", 8, "Number of shards (TPU cores).")
tf.flags.DEFINE_integer(
    "dataset_reader_buffer_size", 8 * 1024 * 1024,
    "Bytes of read-ahead buffer of each TFRecord file reader.")
tf.flags.DEFINE_integer("shuffle_buffer_size", 10000, "Training examples shuffled together.")
tf.flags.DEFINE_integer(
    "random_seed", 1, "Graph-level random seed (RunConfig.tf_random_seed); -1 for none.")
tf.flags.DEFINE_integer(
    "num_predictions", 10,
    "How many test images to predict with the exported SavedModel (0: none).")
tf.flags.DEFINE_bool(
    "enable_predict", False,
    "Also predict those images with TPUEstimator.predict() and compare.")

FLAGS = tf.flags.FLAGS

NUM_CLASSES = 10
IMAGE_PIXELS = 28 * 28


# -- Model -----------------------------------------------------------------------------------

def create_model(images, training):
    """images [B, 784] in [-0.5, 0.5] -> logits [B, 10]."""
    input_layer = tf.reshape(images, [-1, 28, 28, 1])
    conv1 = tf.layers.conv2d(inputs=input_layer, filters=32, kernel_size=[5, 5],
                             padding="same", activation=tf.nn.relu)
    pool1 = tf.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
    conv2 = tf.layers.conv2d(inputs=pool1, filters=64, kernel_size=[5, 5],
                             padding="same", activation=tf.nn.relu)
    pool2 = tf.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
    pool2_flat = tf.reshape(pool2, [-1, 7 * 7 * 64])
    dense = tf.layers.dense(inputs=pool2_flat, units=1024, activation=tf.nn.relu)
    dropout = tf.layers.dropout(inputs=dense, rate=0.4, training=training)
    return tf.layers.dense(inputs=dropout, units=NUM_CLASSES)


def metric_fn(labels, logits):
    """Runs on the host (CPU) with the eval batches' labels and logits."""
    predictions = tf.argmax(logits, 1)
    return {"accuracy": tf.metrics.accuracy(labels=labels, predictions=predictions)}


def model_fn(features, labels, mode, params):
    """The model_fn of TPUEstimator: a CNN classifier of 28x28 images."""
    del params  # batch_size and use_tpu are not needed here.
    logits = create_model(features, training=mode == tf.estimator.ModeKeys.TRAIN)

    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {
            "class_ids": tf.argmax(logits, axis=1),
            "probabilities": tf.nn.softmax(logits),
        }
        return tf.contrib.tpu.TPUEstimatorSpec(
            mode=mode, predictions=predictions,
            export_outputs={"classify": tf.estimator.export.PredictOutput(predictions)})

    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.contrib.tpu.TPUEstimatorSpec(
            mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))

    learning_rate = tf.train.exponential_decay(
        FLAGS.learning_rate, tf.train.get_global_step(), decay_steps=100000, decay_rate=0.96)
    optimizer = tf.train.MomentumOptimizer(learning_rate=learning_rate, momentum=0.9)
    if FLAGS.use_tpu:
        optimizer = tf.contrib.tpu.CrossShardOptimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.contrib.tpu.TPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)


# -- Input -----------------------------------------------------------------------------------

def normalize(images):
    """uint8 pixels [..., 784] -> float32 in [-0.5, 0.5]."""
    return tf.cast(images, tf.float32) * (1. / 255) - 0.5


def parser(serialized_example):
    """Parses a single tf.Example into image and label tensors."""
    features = tf.parse_single_example(
        serialized_example,
        features={
            "image_raw": tf.FixedLenFeature([], tf.string),
            "label": tf.FixedLenFeature([], tf.int64),
        })
    image = tf.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([IMAGE_PIXELS])
    label = tf.cast(features["label"], tf.int32)
    return normalize(image), label


def make_input_fn(filename, training, repeat=None):
    """An input_fn reading `filename`: shuffled and endless for training, else one pass."""
    repeat = training if repeat is None else repeat

    def input_fn(params):
        batch_size = params["batch_size"]
        dataset = tf.data.TFRecordDataset(
            filename, buffer_size=FLAGS.dataset_reader_buffer_size)
        dataset = dataset.cache()
        if training:
            dataset = dataset.shuffle(FLAGS.shuffle_buffer_size)
        if repeat:
            dataset = dataset.repeat()
        # TPUs need static shapes: endless input drops the (never reached) partial batch.
        # A single pass keeps its last, smaller batch; TPUEstimator pads it for the TPU
        # and counts only its real rows.
        dataset = dataset.apply(tf.contrib.data.map_and_batch(
            parser, batch_size=batch_size, drop_remainder=repeat))
        return dataset.prefetch(2)

    return input_fn


def make_predict_input_fn(images):
    """An input_fn predicting `images` ([N, 784] uint8), in order."""
    def predict_input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(images).map(normalize)
        return dataset.batch(params["batch_size"])
    return predict_input_fn


def serving_input_receiver_fn():
    """Serving takes `image`: a batch of 28x28 uint8 images."""
    image = tf.placeholder(tf.uint8, [None, 28, 28], name="image")
    images = normalize(tf.reshape(image, [-1, IMAGE_PIXELS]))
    return tf.estimator.export.TensorServingInputReceiver(images, {"image": image})


def read_examples(filename, count):
    """The first `count` (images [N, 784] uint8, labels [N]) of a TFRecord file."""
    images, labels = [], []
    for record in tf.python_io.tf_record_iterator(filename):
        example = tf.train.Example.FromString(record)
        feature = example.features.feature
        images.append(np.frombuffer(feature["image_raw"].bytes_list.value[0], np.uint8))
        labels.append(feature["label"].int64_list.value[0])
        if len(images) == count:
            break
    return np.stack(images), np.asarray(labels)


def prepare_data(data_dir, model_dir):
    """The directory holding train.tfrecords and test.tfrecords, writing them if needed."""
    if data_dir is None:
        data_dir = os.path.join(model_dir, "digits_tfrecords")
        tf.logging.info("No --data_dir: writing scikit-learn's digits to %s", data_dir)
        convert_to_records.write_digits_records(data_dir)
        return data_dir
    if tf.gfile.Exists(os.path.join(data_dir, convert_to_records.TRAIN_FILE)):
        return data_dir
    if convert_to_records.has_idx_files(data_dir):
        records_dir = os.path.join(model_dir, "mnist_tfrecords")
        if not tf.gfile.Exists(os.path.join(records_dir, convert_to_records.TEST_FILE)):
            tf.logging.info("Converting the MNIST idx files of %s to %s", data_dir,
                            records_dir)
            convert_to_records.convert("idx", records_dir, mnist_dir=data_dir)
        return records_dir
    raise ValueError(
        f"--data_dir={data_dir} has neither {convert_to_records.TRAIN_FILE} nor the MNIST idx "
        "files. Write the TFRecords with `python -m models.mnist.convert_to_records`.")


# -- Main ------------------------------------------------------------------------------------

def count_examples(filename):
    """The number of records in a TFRecord file."""
    return sum(1 for _ in tf.python_io.tf_record_iterator(filename))


def predict_with_saved_model(export_path, images):
    """Runs the exported SavedModel's serving signature (TF1 loader) on uint8 `images`."""
    with tf.Graph().as_default(), tf.Session() as session:
        meta_graph = tf.saved_model.loader.load(
            session, [tf.saved_model.tag_constants.SERVING], export_path)
        signature = meta_graph.signature_def[
            tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        fetches = {key: signature.outputs[key].name for key in ("class_ids", "probabilities")}
        return session.run(fetches,
                           {signature.inputs["image"].name: images.reshape(-1, 28, 28)})


def main(argv):
    del argv  # Unused.
    tf.logging.set_verbosity(tf.logging.INFO)
    started = time.time()

    model_dir = FLAGS.model_dir or tempfile.mkdtemp(prefix="mnist_tpu_")
    tf.gfile.MakeDirs(model_dir)
    data_dir = prepare_data(FLAGS.data_dir, model_dir)
    train_file = os.path.join(data_dir, convert_to_records.TRAIN_FILE)
    test_file = os.path.join(data_dir, convert_to_records.TEST_FILE)

    cluster = None
    if FLAGS.use_tpu and FLAGS.master is None:
        cluster = tf.contrib.cluster_resolver.TPUClusterResolver(
            FLAGS.tpu, zone=FLAGS.tpu_zone, project=FLAGS.gcp_project)

    run_config = tf.contrib.tpu.RunConfig(
        cluster=cluster,
        master=FLAGS.master,
        model_dir=model_dir,
        tf_random_seed=None if FLAGS.random_seed < 0 else FLAGS.random_seed,
        save_checkpoints_steps=max(FLAGS.iterations, FLAGS.train_steps),
        session_config=tf.ConfigProto(allow_soft_placement=True,
                                      log_device_placement=False),
        tpu_config=tf.contrib.tpu.TPUConfig(FLAGS.iterations, FLAGS.num_shards),
    )

    estimator = tf.contrib.tpu.TPUEstimator(
        model_fn=model_fn,
        use_tpu=FLAGS.use_tpu,
        train_batch_size=FLAGS.batch_size,
        eval_batch_size=FLAGS.batch_size,
        predict_batch_size=FLAGS.batch_size,
        config=run_config)

    # On TPU, TPUEstimator.train requires steps or max_steps.
    estimator.train(input_fn=make_input_fn(train_file, training=True),
                    max_steps=FLAGS.train_steps)

    # Evaluation: eval_steps batches, or the whole test set once (the last batch is partial).
    if FLAGS.eval_steps:
        eval_steps = FLAGS.eval_steps
        eval_input_fn = make_input_fn(test_file, training=False, repeat=True)
    else:
        eval_steps = (count_examples(test_file) + FLAGS.batch_size - 1) // FLAGS.batch_size
        eval_input_fn = make_input_fn(test_file, training=False, repeat=False)
    results = estimator.evaluate(input_fn=eval_input_fn, steps=eval_steps)
    print(f"Eval results: loss = {results['loss']:.4f}, "
          f"global_step = {results['global_step']}")
    print(f"Final eval accuracy: {results['accuracy']:.4f}")

    export_dir_base = FLAGS.export_dir or os.path.join(model_dir, "export")
    export_path = estimator.export_saved_model(export_dir_base, serving_input_receiver_fn)
    if isinstance(export_path, bytes):
        export_path = export_path.decode("utf-8")
    print(f"Exported SavedModel to {export_path}")

    if FLAGS.num_predictions > 0:
        images, labels = read_examples(test_file, FLAGS.num_predictions)
        served = predict_with_saved_model(export_path, images)
        print(f"Predictions of the exported SavedModel on the first {len(images)} test images:")
        for index, (class_id, probabilities, label) in enumerate(
                zip(served["class_ids"], served["probabilities"], labels)):
            print(f"  image {index}: predicted {class_id} "
                  f"({100 * probabilities[class_id]:.1f}%), true label {label}"
                  f"{'' if class_id == label else '  <- wrong'}")
        if FLAGS.enable_predict:
            # Consume the whole generator, as TPUEstimator asks.
            predictions = list(estimator.predict(input_fn=make_predict_input_fn(images)))
            agree = sum(int(p["class_ids"]) == c
                        for p, c in zip(predictions, served["class_ids"]))
            print(f"TPUEstimator.predict() agrees with the SavedModel on {agree}/"
                  f"{len(images)} images")

    print(f"Done in {time.time() - started:.1f} s; model_dir: {model_dir}")


if __name__ == "__main__":
    tf.app.run(main)
