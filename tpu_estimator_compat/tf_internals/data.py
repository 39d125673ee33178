"""tf.data internals: the dataset a TF1 `tf.compat.v1.data.Dataset` wraps, the factory of
`MultiDeviceIterator`'s per-device datasets, a dataset's graph."""
import contextlib

import tensorflow as tf

from tensorflow.python.data.ops import multi_device_iterator_ops

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tensorflow.python.data.ops.dataset_ops", "DatasetV1Adapter._dataset",
           "an input_fn's TF1 Dataset is read as the TF2 Dataset it wraps",
           per_instance=True),
    Symbol("tensorflow.python.data.ops.dataset_ops", "DatasetV2._as_serialized_graph",
           "an input error names the files input_fn's dataset reads (the constants of its "
           "graph)"),
    Symbol("tensorflow.python.data.ops.multi_device_iterator_ops", "_create_device_dataset",
           "MultiDeviceIterator's per-device datasets (nothing to tune) run without an "
           "autotuning thread each"),
)


def dataset_graph_def(dataset):
    """The GraphDef of a dataset's pipeline (its functions in the library)."""
    serialized = dataset._as_serialized_graph()  # pylint: disable=protected-access
    return tf.compat.v1.GraphDef.FromString(serialized.numpy())


def unwrap_v1_dataset(dataset):
    """The TF2 Dataset a `tf.compat.v1.data.Dataset` wraps."""
    return dataset._dataset  # pylint: disable=protected-access


@contextlib.contextmanager
def per_device_datasets_transformed(transform):
    """Within the block, `MultiDeviceIterator`'s per-device datasets are `transform(dataset)`;
    without the private factory (a TensorFlow that changed it) they are left as they are."""
    factory = getattr(multi_device_iterator_ops, "_create_device_dataset", None)
    if factory is None:
        yield
        return

    def create_device_dataset(*args, **kwargs):
        return transform(factory(*args, **kwargs))

    # pylint: disable=protected-access
    multi_device_iterator_ops._create_device_dataset = create_device_dataset
    try:
        yield
    finally:
        multi_device_iterator_ops._create_device_dataset = factory
