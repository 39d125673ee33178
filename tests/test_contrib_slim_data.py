"""`tf.contrib.slim`'s parts that read `control_flow_ops.case` / `cond`, which TensorFlow 2.21
moved: `tfexample_decoder`'s `Image` handler (how object-detection programs such as
tensorflow/tpu's retinanet decode their records) and the streaming AUC metrics."""
import numpy as np

import tpu_estimator_compat.v1 as tf

slim_example_decoder = tf.contrib.slim.tfexample_decoder

# A 2x3 RGB image as PNG (lossless): decoding must give these pixels back.
PIXELS = np.arange(18, dtype=np.uint8).reshape(2, 3, 3) * 10


def _example(image_bytes, image_format):
    def feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    features = {"image/encoded": feature(image_bytes), "image/format": feature(image_format)}
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _decode(serialized):
    keys_to_features = {
        "image/encoded": tf.FixedLenFeature((), tf.string, default_value=""),
        "image/format": tf.FixedLenFeature((), tf.string, default_value="jpeg")}
    handlers = {"image": slim_example_decoder.Image(
        image_key="image/encoded", format_key="image/format", channels=3)}
    decoder = slim_example_decoder.TFExampleDecoder(keys_to_features, handlers)
    with tf.Graph().as_default():
        [image] = decoder.decode(tf.constant(serialized), items=["image"])
        with tf.Session() as session:
            return session.run(image)


def test_tfexample_decoder_image_handler_decodes_by_format():
    png = tf.image.encode_png(PIXELS).numpy()
    np.testing.assert_array_equal(_decode(_example(png, b"png")), PIXELS)
    jpeg = tf.image.encode_jpeg(PIXELS).numpy()
    decoded = _decode(_example(jpeg, b"jpeg"))
    assert decoded.shape == (2, 3, 3) and decoded.dtype == np.uint8


def test_streaming_dynamic_auc_runs_its_cond():
    # Positives 0.35, 0.8, 0.7 over negatives 0.1, 0.6, 0.2: 8 of 9 pairs ordered, AUC 8/9.
    with tf.Graph().as_default():
        auc, update = tf.contrib.metrics.streaming_dynamic_auc(
            tf.constant([0, 0, 1, 1, 1, 0], tf.int64),
            tf.constant([0.1, 0.6, 0.35, 0.8, 0.7, 0.2]))
        with tf.Session() as session:
            session.run(tf.local_variables_initializer())
            session.run(update)
            assert abs(session.run(auc) - 8 / 9) < 1e-6
